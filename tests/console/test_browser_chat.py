"""The main flow in a real browser (Debian chromium via Playwright) against daphne + a real Celery worker:
sign in → New agent → enable a capability and set a config value → publish → chat: the answer streams, tool
steps fold on the rail, a chart renders → require approval on a tool → the approval panel, Approve → the turn
continues → Activity shows the run with its cost → the reopened conversation shows the same turns.
Screenshots of every screen go to test-artifacts/console/."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from agenticos.models import Membership
from agents.models import Agent, Run
from agents.run_handle import group_name
from agents.runner.frames import frame
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000

# Every rendered part of every turn, in order: what must be identical live and reopened.
TURN_SHAPE_JS = """() => Array.from(document.querySelectorAll('[data-transcript] .turn')).map(t => ({
  role: t.dataset.turn,
  parts: Array.from(t.querySelectorAll('.turn-body > [data-part]')).map(p => ({
    type: p.dataset.part,
    text: p.dataset.part === 'text' ? p.textContent.trim() : '',
    steps: Array.from(p.querySelectorAll('[data-step]')).map(s => [s.dataset.step, s.dataset.status,
      s.querySelector('[data-step-line]').textContent]),
    fold: (p.querySelector('[data-fold]') || {}).textContent || '',
    charts: p.querySelectorAll('svg.chart-svg').length,
  })),
  usage: (t.querySelector('[data-tokens]') || {}).textContent || '',
}))"""


def send(page, text):
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def wait_idle(page, answers):
    page.wait_for_function(f"() => document.querySelectorAll('.turn-usage').length >= {answers}")
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")


def shot(page, name):
    page.screenshot(path=str(ARTIFACTS / f"{name}-1440.png"), full_page=True)
    page.set_viewport_size({"width": 375, "height": 812})
    wide = page.evaluate("""() => Array.from(document.querySelectorAll('body *'))
        .filter(e => e.getBoundingClientRect().right > 376 && !e.closest('.table-wrap, .sidenav'))
        .slice(0, 5).map(e => e.tagName + '.' + e.className + '#' + e.id)""")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375 + 1, f"{name} overflows: {wide}"
    page.screenshot(path=str(ARTIFACTS / f"{name}-375.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})


def open_capability(page, cap_id):
    """The Toolbox shows one capability's settings at a time: open it from the list."""
    page.locator(f"[data-toolbox-open={cap_id}]").click()
    return page.locator(f"#cap-{cap_id}")


def save_capability(page, cap_id, name):
    """The Toolbox's one Save for the draft (`cap_id`'s changes with any other)."""
    page.get_by_role("button", name="Save the Toolbox").click()
    page.wait_for_function("() => document.querySelector('[data-toolbox-status]').textContent === "
                           "'Saved in the draft.'")


def test_the_main_flow_from_new_agent_to_a_reopened_conversation(live_server_url, browser):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    viewer = factories.user(email="viewer@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=viewer, role="viewer")
    factories.model_profile(org, label="Demo")

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT)
    frames: list[dict] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(json.loads(payload))))

    # The main flow signs in as a person does, on the drawn form (the other browser tests post it: browser_steps).
    page.goto(f"{live_server_url}/login/")
    page.get_by_label("Email").fill("owner@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server_url}/")
    shot(page, "home-empty")

    # New agent from the starter template. Reasoning on the demo model (which does not reason) is saved but said
    # at the capability, so it is switched off again; then a calculation timeout.
    page.get_by_role("link", name="Agents", exact=True).click()
    page.get_by_label("Name").fill("Helper")
    page.get_by_role("button", name="Create agent").click()
    page.wait_for_selector("[data-capabilities]")
    assert page.locator("[data-recommended]").count() >= 1
    card = open_capability(page, "thinking")
    card.get_by_label("Reasoning").check()
    card.get_by_label("Effort").select_option("low")
    page.get_by_role("button", name="Save the Toolbox").click()
    page.wait_for_function("() => document.querySelector('[data-toolbox-status]').textContent.startsWith('Saved')")
    assert "needs fixing" in page.locator("[data-toolbox-status]").text_content()
    assert "is not a reasoning model" in card.inner_text()
    card.get_by_label("Reasoning").uncheck()
    save_capability(page, "thinking", "Reasoning")
    calculations = open_capability(page, "code_execution")
    calculations.get_by_text("Advanced settings").click()  # limits are folded until opened
    calculations.get_by_label("Time limit (seconds)").fill("30")
    save_capability(page, "code_execution", "Calculations")
    # Files too, so that one prompt makes two plain tool steps (the clock has no tool: the time is in the
    # instructions).
    files = open_capability(page, "sandbox")
    files.get_by_label("Sandbox", exact=True).check()
    save_capability(page, "sandbox", "Sandbox")
    agent = Agent.objects.get(organization=org, name="Helper")
    bindings = {b["id"]: b for b in agent.draft_spec["capabilities"]}
    assert not bindings.get("thinking", {}).get("enabled", False)
    assert bindings["code_execution"]["config"] == {"timeout_secs": 30}
    page.get_by_label("Note for this version").fill("First version")
    page.get_by_role("button", name="Publish").click()
    page.wait_for_selector("[data-environment=production]")
    shot(page, "builder")

    # Chat: the answer streams (a part's words within one 20 ms window travel as one delta), two tools fold on
    # one rail, a chart renders.
    page.goto(f"{live_server_url}/chat/?agent={agent.pk}")
    send(page, "Save a note and calculate 12 * 7")
    wait_idle(page, 1)
    # The summary after the tools arrives as deltas before the run completes, not as one final blob.
    deltas = [i for i, f in enumerate(frames) if f["type"] == "text_delta"]
    tools = [i for i, f in enumerate(frames) if f["type"] == "tool_call"]
    ends = [i for i, f in enumerate(frames) if f["type"] == "complete"]
    assert tools and deltas and ends and tools[-1] < deltas[0] and deltas[-1] < ends[0]
    assert page.locator("[data-fold]").first.text_content().strip() == "1 earlier step"
    page.locator("[data-fold]").first.click()
    assert page.locator("[data-fold]").first.text_content().strip() == "Hide earlier steps"
    assert page.locator(".rail").first.locator("[data-step]").count() == 2
    page.locator("[data-fold]").first.click()
    send(page, "Draw a chart please")
    page.wait_for_selector("svg.chart-svg")
    wait_idle(page, 2)
    assert page.locator("[data-step-line]").last.text_content() == "Drew a chart: Demo chart"
    shot(page, "chat")

    # Require approval on create_chart, publish and promote to production.
    page.goto(f"{live_server_url}/agents/{agent.pk}/")
    charts = open_capability(page, "charts")
    charts.get_by_text("1 tool: approval, name and description").click()
    charts.get_by_label("Approval for create_chart").select_option("required")
    save_capability(page, "charts", "Charts")
    page.get_by_label("Note for this version").fill("Charts need approval")
    page.get_by_role("button", name="Publish").click()
    page.wait_for_selector("[data-version='2']")
    page.get_by_label("Version", exact=True).select_option("2")
    page.get_by_role("button", name="Promote or roll back").click()
    page.wait_for_selector("text=production runs v2")

    page.goto(f"{live_server_url}/chat/?agent={agent.pk}")
    send(page, "Draw a chart please")
    page.wait_for_selector("[data-approval]")
    assert page.locator(".approval-args [data-arg=chart_type]").text_content() == "bar"
    shot(page, "chat-approval")
    page.get_by_role("button", name="Approve").click()
    page.wait_for_selector("svg.chart-svg")
    wait_idle(page, 1)
    page.wait_for_function("() => !document.querySelector('[data-approval]')")
    live = page.evaluate(TURN_SHAPE_JS)
    conversation_url = page.url
    run = Run.objects.filter(agent=agent).order_by("-created_at").first()
    assert run.status == "completed"

    # Activity shows the run with its cost, and its detail page the tool calls.
    page.goto(f"{live_server_url}/activity/")
    row = page.locator(f"[data-run-row='{run.pk}']")
    assert row.locator("[data-run-cost]").text_content().startswith("$")
    shot(page, "activity")
    row.get_by_role("link").click()
    page.wait_for_selector("[data-tool-call]")
    assert page.locator("[data-run-cost]").text_content().startswith("$")
    shot(page, "run-detail")
    page.goto(f"{live_server_url}/approvals/?status=approved")
    assert page.locator("[data-approval-args]").count() == 1
    shot(page, "approvals")

    # Reopen the conversation: the same turns, parts in the same order.
    page.goto(conversation_url)
    page.wait_for_selector("svg.chart-svg")
    assert page.evaluate(TURN_SHAPE_JS) == live
    assert [p["type"] for p in live[1]["parts"]][-1] == "text"

    for name, path in [("home", "/"), ("agents", "/agents/"), ("settings-profile", "/settings/"),
                       ("settings-api-keys", "/settings/api-keys/"), ("settings-secrets", "/settings/secrets/"),
                       ("settings-models", "/settings/models/"), ("settings-members", "/settings/members/"),
                       ("settings-budget", "/settings/budget/"), ("settings-chat-accounts", "/settings/chat-accounts/")]:
        page.goto(f"{live_server_url}{path}")
        shot(page, name)

    # A viewer's session: the Builder shows no edit controls.
    viewer_page = browser.new_page(viewport={"width": 1440, "height": 900})
    viewer_page.set_default_timeout(TIMEOUT)
    sign_in(viewer_page, live_server_url, "viewer@example.com")
    viewer_page.goto(f"{live_server_url}/agents/{agent.pk}/")
    assert viewer_page.locator("main form[method=post]").count() == 0
    assert viewer_page.get_by_role("button", name="Publish").count() == 0
    assert viewer_page.get_by_role("button", name="Save the draft").count() == 0
    shot(viewer_page, "builder-viewer")


def test_a_question_card_returns_on_reopen_and_is_answered_with_the_keyboard(live_server_url, browser):
    org = factories.organization(name="Acme")
    builder = factories.member(org, "builder")
    factories.published_agent(org, builder, name="Chooser", capabilities=[{"id": "ask_user"}])
    asker = factories.user(email="asker@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=asker, role="member")

    page = browser.new_page(viewport={"width": 375, "height": 812})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "asker@example.com", then="/chat/")
    page.get_by_label("Message").focus()
    page.keyboard.type("Help me choose: tea or coffee?")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-question]")

    page.reload()  # the open question comes back with the conversation
    page.wait_for_selector("[data-question]")
    assert page.locator("[data-question] legend").text_content().endswith("Which option do you prefer?")
    page.get_by_label("tea", exact=True).focus()
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.keyboard.press("Space")
    page.get_by_label("Or write your own answer").focus()
    page.keyboard.type("Green tea")
    # Frames keep coming while a card is open (here the run's next steps): the view renders, and the card with its
    # half-given answer stays as it was, focus and all (a card built anew lost them, and a click landing on it).
    run = Run.objects.get(agent__name="Chooser")
    steps = frame("follow_ups", conversation_id=str(run.conversation_id), run_id=str(run.pk), steps=["Tell me more"])
    send_to = async_to_sync(get_channel_layer().group_send)
    with ThreadPoolExecutor(1) as pool:  # off the thread whose loop Playwright's sync API holds
        pool.submit(send_to, group_name(run.pk), {"type": "run.frame", "frame": steps}).result()
    page.wait_for_selector("[data-follow-ups]")
    assert page.get_by_label("Or write your own answer").input_value() == "Green tea"
    assert page.get_by_label("tea", exact=True).is_checked()
    assert page.evaluate("() => document.activeElement.classList.contains('own-answer')")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-send-answers]")
    assert "Green tea" in page.locator(".answers-summary").text_content()
    page.screenshot(path=str(ARTIFACTS / "chat-question-summary-375.png"), full_page=True)
    page.locator("[data-send-answers]").focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('.turn-usage').length >= 1 && "
                           "!document.querySelector('[data-question]') && "
                           "document.querySelector('.answer:last-of-type') !== null")
    page.wait_for_function("() => Array.from(document.querySelectorAll('.answer')).some(a => a.textContent.includes('Green tea'))")
    page.reload()
    page.wait_for_selector(".turn-assistant")
    assert page.locator("[data-question]").count() == 0


def test_an_approval_returns_with_its_conversation_and_approving_it_there_continues_the_turn(
    live_server_url, browser
):
    org = factories.organization(name="Acme")
    owner = factories.user(email="approver@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    factories.published_agent(org, owner, name="Gated", capabilities=[
        {"id": "charts", "tool_approval": {"create_chart": "required"}}, {"id": "clock"}, {"id": "code_execution"},
        {"id": "sandbox"}])

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "approver@example.com", then="/chat/")
    send(page, "Draw a chart please")
    page.wait_for_selector("[data-approval]")
    page.wait_for_function("() => location.pathname !== '/chat/'")

    page.reload()  # this socket never joined the run: the continuation is followed by reading it back
    page.wait_for_selector("[data-approval]")
    assert page.locator("[data-step-line]").last.text_content() == "Drawing a chart: Demo chart — waiting for approval"
    page.get_by_role("button", name="Approve").click()
    page.wait_for_selector("svg.chart-svg")
    page.wait_for_function("() => !document.querySelector('[data-approval]') && "
                           "document.querySelectorAll('.answer').length > 0")
    assert page.locator("[data-step]").last.get_attribute("data-status") == "ok"

    # A batch with a failure never folds: both steps stay on the rail and the failed one says so.
    send(page, "Save a note and calculate 1/0")
    page.wait_for_function("() => document.querySelectorAll('[data-status=error]').length > 0")
    rail = page.locator(".rail").last
    assert rail.locator("[data-fold]").count() == 0
    assert rail.locator("[data-step]").count() == 2
    assert rail.locator("[data-status=error] [data-step-line]").text_content().endswith("— failed")
