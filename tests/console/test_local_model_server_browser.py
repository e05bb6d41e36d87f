"""A local model server as a builder and an owner connect one (issue 44 §4), in Debian's chromium against daphne,
at 1440 and 390 px: with the operator's `host:port` entry the profile saves and Test connection says "Connected.";
a base URL on another loopback port (the platform's own) is refused at its field — the builder reads a plain
refusal without the setting's name, the owner reads exactly which entry to add to which setting. No console error."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from agents.models import ModelProfile
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT
from tests.console.test_channels_console_browser import watch
from tests.fakes.openai_server import FakeOpenAIServer, Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SETTING = "MODEL_ALLOWED_PRIVATE_HOSTS"


@pytest.fixture
def model_server(monkeypatch):
    with FakeOpenAIServer() as server:
        # Only this server's port on loopback, as `make run` lists Ollama's 11434 (read by the daphne subprocess).
        monkeypatch.setenv(SETTING, f"127.0.0.1:{server.port}")
        yield server


def _new_profile(page, base: str, label: str, base_url: str) -> None:
    page.goto(f"{base}/settings/models/")
    page.get_by_label("Label").fill(label)
    page.get_by_label("Provider").select_option("openai_compatible")
    page.get_by_label("Model", exact=True).fill("llama3.2")
    page.get_by_label("Base URL (OpenAI-compatible servers)").fill(base_url)
    page.get_by_role("button", name="Create the profile").click()


@pytest.mark.parametrize("width", [1440, 390])
def test_a_local_server_on_its_listed_port_connects_and_another_loopback_port_is_refused_in_plain_words(
    model_server, live_server_url, browser, width
):
    org = factories.organization(name="Acme")
    builder = factories.member(org, "builder", email=f"lb-{width}@example.com", password=PASSWORD)
    owner = factories.member(org, "owner", email=f"lo-{width}@example.com", password=PASSWORD)
    model_server.queue(Reply.text("OK"), route="chat")
    base = live_server_url
    platform_port = urlparse(base).port
    elsewhere = f"http://127.0.0.1:{platform_port}/v1"  # the platform itself, on loopback

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, builder.email)
    _new_profile(page, base, "Local", model_server.base_url)
    page.locator("[data-test-connection]").click()
    page.locator('[data-check-result="ok"]').wait_for()
    assert "It said: “OK”" in page.locator('[data-check-result="ok"]').inner_text()

    _new_profile(page, base, "Probe", elsewhere)
    error = page.locator("[data-form-error]").filter(has_text="private or local address")
    error.wait_for()
    assert "An administrator of the deployment can allow it." in error.inner_text()
    assert SETTING not in page.content() and "ALLOWED_PRIVATE" not in page.content()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=str(ARTIFACTS / f"local-model-refused-builder-{width}.png"), full_page=True)
    page.context.clear_cookies()

    sign_in(page, base, owner.email)
    _new_profile(page, base, "Probe", elsewhere)
    error = page.locator("[data-form-error]").filter(has_text="private or local address")
    error.wait_for()
    assert f"adds 127.0.0.1:{platform_port} to {SETTING}" in error.inner_text()
    page.screenshot(path=str(ARTIFACTS / f"local-model-refused-owner-{width}.png"), full_page=True)
    assert list(ModelProfile.objects.filter(organization=org).values_list("label", flat=True)) == ["Local"]
    # The refused form answers 422 (the browser logs that status as a console error); anything else is a fault.
    expected = f"{base}/settings/models/"
    assert len(errors) == 4 and all(expected in e and "422" in e for e in errors), errors
