"""The AI tool builder on a fresh organization, in Debian's chromium against daphne and a real Celery worker, at
1440 and 390 px: the demo model came first and an embedding profile sorts first by name, yet the model picker
offers chat models only and starts on the connected one (a local OpenAI-compatible fake speaking the real
protocol); the builder answers from it; the session is not in the person's Chat list — with no console error."""

from __future__ import annotations

import pytest

from agents.models import Run
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT
from tests.console.test_channels_console_browser import watch
from tests.fakes.openai_server import FakeOpenAIServer, Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def model_server(monkeypatch, settings):
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")  # read by the daphne subprocess
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the worker runs in this process
    with FakeOpenAIServer() as server:
        yield server


@pytest.mark.parametrize("width", [1440, 390])
def test_the_tool_builder_runs_on_the_chat_model_chosen_and_stays_out_of_chat(model_server, live_server_url,
                                                                               browser, width):
    org = factories.organization(name="Fresh")
    builder = factories.member(org, "builder", email=f"tb-{width}@example.com", password=PASSWORD)
    factories.model_profile(org, label="Demo")
    factories.model_profile(org, "openai_compatible", "text-embed", label="A embeddings", kind="embedding",
                            base_url=model_server.base_url)
    local = factories.model_profile(org, "openai_compatible", "qwen-local", label="Local model",
                                    base_url=model_server.base_url)
    model_server.queue(Reply.text("Which provider and which operations do you need?"), route="chat")
    base = live_server_url

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, builder.email, then="/tools/ai/")
    page.get_by_label("Title").fill("CRM tools")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{base}/tools/ai/*/")

    picker = page.get_by_label("Model", exact=True)
    assert picker.input_value() == str(local.pk)
    options = picker.locator("option").all_inner_texts()
    assert not any("A embeddings" in o for o in options) and any("cannot build tools" in o for o in options)
    page.get_by_label("Message").fill("Tools for our CRM, please")
    page.get_by_role("button", name="Send").click()
    page.locator('[data-message-role="assistant"]', has_text="Which provider").wait_for(timeout=90_000)
    page.screenshot(path=str(ARTIFACTS / f"tool-builder-model-{width}.png"), full_page=True)
    run = Run.objects.get(organization=org)
    assert run.version.spec["model_profile_id"] == str(local.pk) and run.version.number == 0
    assert model_server.requests_to("chat")[0].json["model"] == "qwen-local"

    page.goto(f"{base}/chat/")
    assert "CRM tools" not in page.locator("main").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert errors == []
