"""Follow-ups in a real browser (Debian chromium via Playwright) against daphne + a real Celery worker, on the
offline demo model as `make run` has it: the suggested next steps appear as buttons under the answer, a click
sends the step as a new message, and the reopened conversation shows the same buttons."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import ModelProfile
from capabilities.follow_ups.models import FollowUp
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, send, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
STEPS_JS = "() => Array.from(document.querySelectorAll('[data-follow-up]')).map(b => b.textContent)"


def test_next_steps_appear_under_the_answer_a_click_sends_one_and_they_survive_a_reopen(live_server_url, browser):
    org = factories.organization(name="Acme")
    person = factories.user(email="follower@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=person, role="member")
    builder = factories.member(org, "builder")
    demo, _ = ModelProfile.objects.get_or_create(organization=org, label="Demo",
                                                 defaults={"provider": "demo", "model": "demo"})
    agent = factories.published_agent(org, builder, name="Guide", capabilities=[
        {"id": "follow_ups", "config": {"model_profile_id": str(demo.pk)}}])

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "follower@example.com", then=f"/chat/?agent={agent.pk}")
    send(page, "hello")
    page.wait_for_selector("[data-follow-ups] [data-follow-up]")
    steps = page.evaluate(STEPS_JS)
    assert steps == ["What else can you do?", "Draw me a chart of sample sales", "What time is it in Tokyo?"]
    page.screenshot(path=str(ARTIFACTS / "chat-follow-ups-1440.png"), full_page=True)

    page.locator("[data-follow-up]").first.click()
    page.wait_for_function("() => Array.from(document.querySelectorAll('.turn-user .bubble'))"
                           ".some(b => b.textContent === 'What else can you do?')")
    page.wait_for_function("() => document.querySelectorAll('[data-follow-ups]').length === 2")
    assert FollowUp.objects.filter(status="ready").count() == 2

    page.reload()
    page.wait_for_selector("[data-follow-ups]")
    assert page.locator("[data-follow-ups]").count() == 2
    assert page.evaluate(STEPS_JS)[:3] == steps


def test_propose_setup_cards_are_drawn_under_the_answer(live_server_url, browser, scripted_model):
    from pydantic_ai.messages import ToolReturnPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    cards = {"cards": [{"kind": "trigger", "title": "Monday digest", "schedule": "0 9 * * 1"},
                       {"kind": "agent", "title": "Refund tracker"}, {"kind": "connection", "title": "Linear", "server_key": "linear"}]}

    async def stream(messages, info):
        if not any(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, "parts", [])):
            import json

            yield {0: DeltaToolCall(name="propose_setup", json_args=json.dumps(cards), tool_call_id="c1")}
        else:
            yield "Three things to set up."

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    org = factories.organization(name="Acme")
    person = factories.user(email="carder@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=person, role="member")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Setup",
                                      capabilities=[{"id": "follow_ups"}])
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "carder@example.com", then=f"/chat/?agent={agent.pk}")
    send(page, "What should I automate?")
    page.wait_for_selector("[data-setup-card]")
    kinds = page.evaluate("() => Array.from(document.querySelectorAll('[data-setup-card]')).map(c => c.dataset.setupCard)")
    assert kinds == ["trigger", "agent", "connection"]
    assert page.locator("[data-setup-card='trigger'] a").get_attribute("href") == f"/agents/{agent.pk}/triggers/"
    # A catalog service's card: its logo and Connect, which posts to the console with the way back here.
    connect = page.locator("[data-setup-card='connection'] form[data-service-connect='linear']")
    assert connect.get_attribute("action") == "/connections/catalog/linear/connect"
    assert connect.locator("img").get_attribute("src").endswith("mcp/logos/linear.svg")
    assert connect.locator("input[name=next]").get_attribute("value").startswith("/chat/")
    assert connect.locator("input[name=csrfmiddlewaretoken]").get_attribute("value")
    assert connect.locator("button").inner_text() == "Connect Linear"
    assert page.locator("[data-follow-ups]").count() == 0  # no model chosen for next steps: no buttons
    page.screenshot(path=str(ARTIFACTS / "chat-setup-cards-1440.png"), full_page=True)
