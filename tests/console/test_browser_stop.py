"""The chat's Stop button in a real browser (Debian chromium via Playwright) against daphne + a real Celery
worker: a turn whose scripted model streams slowly is stopped from the keyboard, ends as stopped (run
cancelled, what streamed kept), and the composer takes the next message at once. At 1440 px from the keyboard
and at 390 px (a touch screen) by a tap on Stop, which stays in view in the composer."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.messages import UserPromptPart
from pydantic_ai.models.function import FunctionModel

from agenticos.models import Membership
from agents.models import Message, Run
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, send, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def last_prompt(messages) -> str:
    parts = getattr(messages[-1], "parts", [])
    return next((str(p.content) for p in reversed(parts) if isinstance(p, UserPromptPart)), "")


async def slow_unless_asked_quickly(messages, info):
    if "quickly" in last_prompt(messages):
        yield "Quick answer."
        return
    yield "Thinking"
    for _ in range(600):  # about 30 s of dots: far longer than the test waits before pressing Stop
        await asyncio.sleep(0.05)
        yield "."


@pytest.mark.parametrize("width", [1440, 390])
def test_stop_ends_a_slow_turn_as_stopped_and_the_composer_takes_the_next_message(
    live_server_url, browser, scripted_model, width
):
    scripted_model(FunctionModel(stream_function=slow_unless_asked_quickly, model_name="scripted"))
    org = factories.organization(name="Acme")
    person = factories.user(email="stopper@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=person, role="member")
    builder = factories.member(org, "builder")
    agent = factories.published_agent(org, builder, name="Slowpoke")

    context = browser.new_context(viewport={"width": width, "height": 900}, has_touch=width < 500)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "stopper@example.com", then=f"/chat/?agent={agent.pk}")
    stop = page.get_by_role("button", name="Stop")
    assert stop.is_hidden()

    send(page, "Think slowly about it")
    page.wait_for_function("() => Array.from(document.querySelectorAll('.answer'))"
                           ".some(a => a.textContent.startsWith('Thinking'))")
    stop.wait_for(state="visible")
    assert page.locator("[data-transcript]").get_attribute("aria-busy") == "true"
    if width < 500:
        box = stop.bounding_box()  # on a phone, Stop sits in the composer at the bottom of the screen, in view
        assert box and box["y"] + box["height"] <= 900 and box["x"] + box["width"] <= width
        stop.tap()
    else:
        stop.focus()
        page.keyboard.press("Enter")

    page.wait_for_selector("[data-stopped]")
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    assert stop.is_hidden()
    assert page.locator("[data-stopped]").text_content() == "Stopped."
    assert page.locator(".turn-error").count() == 0  # a stop asked for is not shown as an error
    run = Run.objects.get(agent=agent)
    assert run.status == "cancelled"
    assert Message.objects.get(run=run, role="assistant").content.startswith("Thinking")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    page.screenshot(path=str(ARTIFACTS / f"chat-stopped-{width}.png"), full_page=True)

    # The composer is usable again at once: the next message is answered in the same conversation.
    send(page, "Answer quickly")
    page.wait_for_function("() => Array.from(document.querySelectorAll('.answer'))"
                           ".some(a => a.textContent.includes('Quick answer.'))")
    page.wait_for_function("() => document.querySelectorAll('.turn-usage').length >= 2")
    second = Run.objects.filter(agent=agent).exclude(pk=run.pk).get()
    assert second.status == "completed" and second.conversation_id == run.conversation_id

    # Reopened, the stopped turn still says so, and only it.
    page.reload()
    page.wait_for_selector(".turn-assistant")
    assert page.locator("[data-stopped]").count() == 1
    assert page.locator(f"[data-run-id='{run.pk}'] [data-stopped]").count() == 1
