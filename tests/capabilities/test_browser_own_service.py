"""The browser capability's default is this deployment's own browser service: a binding that names no cdp_url
browses with BROWSER_CDP_URL (allowed as the operator's own, whatever BROWSER_CDP_ALLOWED_HOSTS lists), read when
the browse starts; without an own service the Builder says what is missing at the field; a cdp_url naming another
host is still held to the operator's list. `make run` makes its chromium that default."""

from __future__ import annotations

import asyncio

import pytest

from capabilities.browser.config import BrowserConfig, publish_problems
from capabilities.browser.session import cdp_address, endpoint
from config import launcher


def test_an_empty_address_is_the_deployments_own_service(settings):
    settings.BROWSER_CDP_URL = "http://127.0.0.1:9333"
    settings.BROWSER_CDP_ALLOWED_HOSTS = []
    config = BrowserConfig()
    assert cdp_address(config) == "http://127.0.0.1:9333"
    assert [field for field, _ in publish_problems(config)] == []
    assert asyncio.run(endpoint(config, None)) == "http://127.0.0.1:9333"


def test_without_an_own_service_the_field_says_what_is_missing(settings):
    settings.BROWSER_CDP_URL = ""
    settings.BROWSER_CDP_ALLOWED_HOSTS = ["127.0.0.1"]
    problems = dict(publish_problems(BrowserConfig()))
    assert "no browser service of its own" in problems["cdp_url"]


@pytest.mark.parametrize("url", ["http://10.0.0.5:9222", "http://127.0.0.2:9333", "http://169.254.169.254/"])
def test_another_address_is_still_held_to_the_operators_list(settings, url):
    settings.BROWSER_CDP_URL = "http://127.0.0.1:9333"
    settings.BROWSER_CDP_ALLOWED_HOSTS = []
    problems = dict(publish_problems(BrowserConfig(cdp_url=url)))
    assert "not one the operator allows" in problems["cdp_url"]


def test_make_run_makes_its_chromium_the_default(monkeypatch):
    for name in ("BROWSER_CDP_URL", "BROWSER_CDP_ALLOWED_HOSTS", "BROWSER_CDP_PORT"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    launcher.allow_own_browser()
    import os

    assert os.environ["BROWSER_CDP_URL"] == "http://127.0.0.1:9222"
    monkeypatch.setenv("BROWSER_CDP_URL", "http://browser:9222")
    launcher.allow_own_browser()
    assert os.environ["BROWSER_CDP_URL"] == "http://browser:9222"  # the operator's wins


def test_the_builder_folds_the_address_away_and_says_empty_is_the_own_service():
    schema = BrowserConfig.model_json_schema()["properties"]["cdp_url"]
    assert schema["x-advanced"] is True and "own browser service" in schema["description"]
