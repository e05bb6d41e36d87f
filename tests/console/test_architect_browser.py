"""The welcome interview in Debian's chromium against daphne + a real Celery worker, the Architect answering
through the real OpenAI client from the local fake OpenAI server: a new organization's owner signs in, the home
page offers the interview, Start opens the conversation with the Architect, which asks a question, reads the
organization's options and proposes an agent drawn as a card with the model and collection by name; the person
renames it and creates the draft, which opens in the Builder unpublished, with the weekday schedule the card
described in words ("it starts once you publish"). At 1440 and 390 px; no console error."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import Agent
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.fakes.openai_server import Reply
from triggers.models import Trigger

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000


@pytest.fixture(autouse=True)
def _fake_model_host_for_daphne(monkeypatch):
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")


@pytest.mark.parametrize("width", [1440, 390])
def test_a_new_organizations_owner_is_interviewed_and_accepts_the_proposed_agent_as_a_draft(
        live_server_url, browser, fake_openai, width):
    org = factories.organization(name="Acme")
    owner = factories.user(email="founder@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    profile = factories.model_profile(org, provider="openai_compatible", model="fake-model", label="Team GPT",
                                      base_url=fake_openai.base_url)
    docs = factories.collection(org, "Refund policies", created_by=owner, visibility="organization")
    setup = {"name": "Refunds desk", "instructions": "You answer refund questions from Acme's policies.",
             "model_profile_id": str(profile.pk), "capabilities": [{"id": "knowledge"}],
             "collection_ids": [str(docs.pk)], "knowledge_to_upload": ["The 2026 returns form"],
             "monthly_budget_usd": "20", "where": "Web chat for the support team",
             "trigger": {"name": "Morning digest", "prompt": "Summarize yesterday's refund requests.",
                         "cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"}}
    fake_openai.queue(
        Reply.text("Who will use this agent, and where should it answer?"),
        Reply.tool_call("list_setup_options", {}),
        Reply.tool_call("propose_setup", {"cards": [{"kind": "agent", "title": "Refunds desk", "setup": setup}]}),
        Reply.text("I proposed a Refunds desk. Accept the card to get a draft."))

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, live_server_url, "founder@example.com")
    welcome = page.locator("[data-welcome]")
    welcome.get_by_label("What would you like an agent to do for you?").fill("Answer refund questions")
    page.screenshot(path=str(ARTIFACTS / f"architect-welcome-{width}.png"), full_page=True)
    welcome.get_by_role("button", name="Start the interview").click()
    page.wait_for_url(f"{live_server_url}/chat/**")
    page.get_by_text("Who will use this agent, and where should it answer?").wait_for()
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")

    page.get_by_label("Message").fill("My support team, in web chat")
    page.get_by_role("button", name="Send").click()
    card = page.locator("[data-setup-card=agent] [data-proposal]")
    card.wait_for()
    # Named while the answer still streams: the run's end draws the transcript again, and the card drawn anew keeps
    # what the person typed (it once went into a card that was gone, and the draft got the proposed name).
    card.get_by_label("Name").fill("Refund helper")
    page.get_by_text("Accept the card to get a draft.").wait_for()
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    facts = card.locator(".proposal-facts").inner_text()
    assert "Team GPT" in facts and "Refund policies" in facts and "The 2026 returns form" in facts
    assert str(docs.pk) not in facts  # the person sees names, not ids
    assert "Runs on a schedule" in facts and "Monday through Friday (Europe/Madrid)" in facts
    assert "It starts once you publish the agent." in facts and "0 9 * * 1-5" not in facts
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    page.screenshot(path=str(ARTIFACTS / f"architect-proposal-{width}.png"), full_page=True)

    assert card.get_by_label("Name").input_value() == "Refund helper"
    card.get_by_role("button", name="Create the draft").click()
    opened = card.locator("[data-proposal-open]")
    opened.wait_for()
    created = Agent.objects.get(organization=org, name="Refund helper")
    assert opened.get_attribute("href") == f"/agents/{created.pk}/"
    assert created.draft_spec["collection_ids"] == [str(docs.pk)] and not created.versions.exists()
    (trigger,) = Trigger.objects.filter(agent=created)
    assert (trigger.cron, trigger.timezone, trigger.creator_id) == ("0 9 * * 1-5", "Europe/Madrid", owner.pk)

    # Reopened, the card shows the draft it made instead of offering to make another.
    page.reload()
    page.locator("[data-setup-card=agent] [data-proposal-open]").wait_for()
    assert page.locator("[data-proposal-accept]").count() == 0
    opened = page.locator("[data-proposal-open]")
    opened.click()
    page.wait_for_url(f"{live_server_url}/agents/{created.pk}/")
    assert problems == []
