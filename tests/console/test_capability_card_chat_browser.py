"""The missing-capability card in web chat, in Debian's chromium against daphne + a real Celery worker, the model
answering through the real OpenAI client from the local fake OpenAI server: the model's request_capability call
draws a card naming the capability, what it offers and why; an owner enables it on the agent from the card, and a
member who may not edit it asks the owner instead. Reopened, the card is drawn again from the call. At 1440 and
390 px; no console error."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agenticos.tenancy import actor_for_membership
from agents import services as agent_services
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.fakes.openai_server import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000


@pytest.fixture(autouse=True)
def _fake_model_host_for_daphne(monkeypatch):
    monkeypatch.setenv("MODEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")


def published_agent(org, owner, fake_openai):
    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    profile = factories.model_profile(org, provider="openai_compatible", model="fake-model", label="Fake",
                                      base_url=fake_openai.base_url)
    agent = agent_services.create_agent(actor=actor, name="Helper", spec={
        "name": "Helper", "instructions": "Help.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "clock"}]})
    agent_services.publish_agent(actor=actor, agent=agent, note="v1")
    return agent


def ask_for_a_page(page, base_url, agent, fake_openai):
    fake_openai.queue(
        Reply.tool_call("request_capability", {"capability_id": "web_fetch", "reason": "I must read that page."}),
        Reply.text("Web pages would let me read it."),
    )
    page.goto(f"{base_url}/chat/?agent={agent.pk}")
    page.get_by_label("Message").fill("Read https://example.com for me")
    page.get_by_role("button", name="Send").click()
    card = page.locator("[data-capability-card=web_fetch]")
    card.wait_for()
    return card


@pytest.mark.parametrize("width", [1440, 390])
def test_an_owner_enables_a_missing_capability_from_the_card_in_web_chat(live_server_url, browser, fake_openai, width):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = published_agent(org, owner, fake_openai)

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com")
    card = ask_for_a_page(page, live_server_url, agent, fake_openai)
    text = card.text_content()
    assert "I must read that page." in text and "This needs a capability the agent does not have:" in text
    page.wait_for_selector("[data-turn-usage]")
    card = page.locator("[data-capability-card=web_fetch]")
    card.get_by_role("button", name="Enable it").click()
    result = card.locator("[data-capability-result]")
    result.wait_for()
    assert result.get_attribute("data-capability-result") == "ok" and result.text_content()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    page.screenshot(path=str(ARTIFACTS / f"chat-capability-card-{width}.png"), full_page=True)
    agent.refresh_from_db()
    assert "web_fetch" in {b["id"] for b in agent.draft_spec["capabilities"]}

    # Reopened, the card is drawn again from the request_capability call, still offering the owner "Enable it".
    page.reload()
    page.locator("[data-capability-card=web_fetch]").wait_for()
    assert "I must read that page." in page.locator("[data-capability-card=web_fetch]").text_content()
    assert page.locator("[data-capability-card=web_fetch]").get_by_role("button", name="Enable it").count() == 1
    assert problems == []


@pytest.mark.parametrize("width", [1440, 390])
def test_a_member_who_cannot_edit_the_agent_asks_its_owner_from_the_card(live_server_url, browser, fake_openai, width):
    from notifications.models import Notification

    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    user = factories.user(email="member@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=user, role="member")
    agent = published_agent(org, owner, fake_openai)

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    sign_in(page, live_server_url, "member@example.com")
    ask_for_a_page(page, live_server_url, agent, fake_openai)
    page.wait_for_selector("[data-turn-usage]")
    card = page.locator("[data-capability-card=web_fetch]")
    assert card.get_by_role("button", name="Enable it", exact=True).count() == 0
    card.get_by_role("button", name="Ask the owner to enable it").click()
    card.locator("[data-capability-result=ok]").wait_for()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    agent.refresh_from_db()
    assert "web_fetch" not in {b["id"] for b in agent.draft_spec["capabilities"]}
    assert Notification.objects.filter(recipient=owner).exists()
    # Reopened, a member still may only ask.
    page.reload()
    reopened = page.locator("[data-capability-card=web_fetch]")
    reopened.wait_for()
    assert reopened.get_by_role("button", name="Enable it", exact=True).count() == 0
    assert reopened.get_by_role("button", name="Ask the owner to enable it").count() == 1
    assert problems == []
