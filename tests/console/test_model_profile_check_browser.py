"""A model profile as a builder connects one, in Debian's chromium against daphne, at 1440 and 390 px: the key
is typed in the form (no trip to Settings → Secrets), the profile opens on its edit page, Test connection sends
one real request to a local OpenAI-compatible server and says "Connected." with the provider's model list
offered for the Model field; the key is never on a page — with no console error."""

from __future__ import annotations

import pytest

from agenticos.models import Secret
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT
from tests.console.test_channels_console_browser import watch
from tests.fakes.openai_server import FakeOpenAIServer, Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
KEY = "sk-browser-typed-7788"


@pytest.fixture
def model_server(monkeypatch):
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")  # the test runs in the daphne subprocess
    with FakeOpenAIServer() as server:
        yield server


@pytest.mark.parametrize("width", [1440, 390])
def test_a_builder_types_the_key_and_tests_the_connection(model_server, live_server_url, browser, width):
    org = factories.organization(name="Acme")
    builder = factories.member(org, "builder", email=f"mp-{width}@example.com", password=PASSWORD)
    model_server.queue(Reply.text("OK"), route="chat")
    base = live_server_url

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, builder.email, then="/settings/models/")
    page.get_by_label("Label").fill("Local")
    page.get_by_label("Provider").select_option("openai_compatible")
    page.get_by_label("Model", exact=True).fill("qwen")
    page.get_by_label("Or type the key").fill(KEY)
    page.get_by_label("Base URL (OpenAI-compatible servers)").fill(model_server.base_url)
    page.get_by_role("button", name="Create the profile").click()
    page.get_by_text("test its connection").wait_for()

    page.locator("[data-test-connection]").click()
    page.locator('[data-check-result="ok"]').wait_for()
    assert "It said: “OK”" in page.locator('[data-check-result="ok"]').inner_text()
    assert page.locator('#m-model-list option[value="fake-model"]').count() == 1
    assert KEY not in page.content()
    assert model_server.requests_to("chat")[0].headers["authorization"] == f"Bearer {KEY}"
    assert Secret.objects.get(organization=org).name == "Local key"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=str(ARTIFACTS / f"model-profile-test-connection-{width}.png"), full_page=True)
    assert errors == []
