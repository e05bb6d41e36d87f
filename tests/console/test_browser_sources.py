"""Citations drawn as sources (issue 44 §1): an answer that searched the organization's documents shows them under
it — the document and its page — and a click opens the passage it drew on; the tool's raw text is not what the reader
gets. In web chat and in the Builder's test chat (the same renderer), in a real browser (Debian chromium via
Playwright) against daphne + a real Celery worker, the model answering through the real OpenAI client from the local
fake OpenAI server and the search running for real over an ingested PDF. At 1440 and 390 px, with no console error."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from knowledge import services as knowledge_services
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.fakes.openai_server import Reply
from tests.knowledge import files

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000


@pytest.fixture(autouse=True)
def _fake_model_host_for_daphne(monkeypatch):
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")


def watched_page(browser, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return page, problems


def agent_over_a_handbook(fake_openai):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    handbook = factories.collection(org, "Handbook")
    pdf = factories.document(handbook, "policy.pdf", files.pdf(["Welcome to Acme.", "Refunds take ten days."]))
    knowledge_services.ingest(str(pdf.pk))
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    profile = factories.model_profile(org, provider="openai_compatible", model="fake-model", label="Fake",
                                      base_url=fake_openai.base_url)
    agent = agent_services.create_agent(actor=actor, name="Helper", spec={
        "name": "Helper", "instructions": "Answer from the handbook.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "knowledge"}], "collection_ids": [str(handbook.pk)]})
    agent_services.publish_agent(actor=actor, agent=agent, note="v1")
    fake_openai.queue(Reply.tool_call("search_documents", {"query": "refunds"}),
                      Reply.text("Refunds take ten days [1]."))
    return agent


def check_sources(page, scope, width, name):
    sources = scope.locator("[data-sources]")
    sources.wait_for()
    source = sources.locator("[data-source]")
    assert source.count() == 1
    assert source.get_attribute("data-source") == "policy.pdf" and source.get_attribute("data-page") == "2"
    assert source.locator("summary").inner_text().replace("\n", " ") == "1 policy.pdf · page 2"
    passage = source.locator("[data-source-passage]")
    assert not passage.is_visible()
    source.locator("summary").click()  # opening the source shows the passage the answer drew on
    assert passage.is_visible() and passage.text_content() == "Refunds take ten days."
    # The reader sees sources, not the tool's raw text.
    assert "Cite the document" not in scope.locator("[data-transcript]").inner_text()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)


@pytest.mark.parametrize("width", [1440, 390])
def test_a_knowledge_answer_in_web_chat_shows_its_sources_opening_the_passage(live_server_url, browser, fake_openai,
                                                                              width):
    agent_over_a_handbook(fake_openai)
    page, problems = watched_page(browser, width)
    sign_in(page, live_server_url, "owner@example.com", then="/chat/")
    page.get_by_label("Message").fill("How long do refunds take?")
    page.get_by_role("button", name="Send").click()
    check_sources(page, page.locator("[data-chat]"), width, "chat-sources")
    # Reopened, the stored transcript draws the same sources.
    page.reload()
    check_sources(page, page.locator("[data-chat]"), width, "chat-sources-reopened")
    assert problems == []


@pytest.mark.parametrize("width", [1440, 390])
def test_a_knowledge_answer_in_the_test_chat_shows_its_sources_opening_the_passage(live_server_url, browser,
                                                                                   fake_openai, width):
    agent = agent_over_a_handbook(fake_openai)
    page, problems = watched_page(browser, width)
    sign_in(page, live_server_url, "owner@example.com", then=f"/agents/{agent.pk}/")
    chat = page.locator("[data-test-chat]")
    chat.get_by_label("Message to the draft").fill("How long do refunds take?")
    chat.get_by_role("button", name="Send to the draft").click()
    check_sources(page, chat, width, "builder-test-chat-sources")
    assert problems == []
