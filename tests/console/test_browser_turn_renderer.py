"""Web chat through the one turn renderer (console/static/console/turn.js), in Debian's chromium against daphne + a real
Celery worker: highlighted code with a copy button, tables, a generated image inline, a visual reopened, and an
approval decided on the Approvals page reaching a chat tab that was reloaded while the run waited — with no
console error. And the socket side of that: only a member of the run's organization may follow a run."""

from __future__ import annotations

import base64
import json

import pytest

from agenticos.models import Membership
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000
# A 1×1 PNG: what an image model returned, as the store keeps it.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==")


def console_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def member(org, email, role="owner"):
    user = factories.user(email=email, password=PASSWORD)
    Membership.objects.create(organization=org, user=user, role=role)
    return user


@pytest.mark.browser
@pytest.mark.parametrize("width", [1440, 390])
def test_code_is_highlighted_with_a_copy_button_and_a_generated_image_shows_inline(live_server_url, browser, width):
    from agents.models import Conversation, Message, Run, ToolCall
    from media import store

    org = factories.organization(name="Acme")
    owner = member(org, "owner@example.com")
    agent = factories.published_agent(org, owner, name="Painter")
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="Paint")
    image = store.save(organization_id=org.pk, run_id=None, conversation_id=conversation.pk, kind="image", data=PNG,
                       media_type="image/png", name="sunset")
    answer = ("Here is the code:\n\n```python\ndef greet(name):\n    return f'hi {name}'\n```\n\n"
              "| Region | Sales |\n|---|---|\n| EU | 3 |\n| US | 5 |\n\n"
              f"And the picture: [sunset.png](/api/v1/generated/{image.filename})")
    run = Run.objects.create(organization=org, agent=agent, version=agent.environments.get(name="production").version,
                             surface="web", prompt="Paint me something", user=owner, conversation=conversation,
                             status="completed")
    Message.objects.create(conversation=conversation, run=run, role="user", content="Paint me something")
    message = Message.objects.create(conversation=conversation, run=run, role="assistant", author_label="Painter",
                                     content=answer, parts=[{"type": "text", "text": answer},
                                                            {"type": "tool", "tool_call_id": "call_draw"}])
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><circle cx="20" cy="20" r="10"/></svg>'
    ToolCall.objects.create(run=run, message=message, tool_call_id="call_draw", tool_name="draw",
                            args={"kind": "svg", "title": "A dot", "content": svg},
                            result={"visual_id": "call_draw", "visual_kind": "svg", "title": "A dot"}, status="ok")

    context = browser.new_context(viewport={"width": width, "height": 900}, has_touch=width < 500)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server_url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = console_errors(page)
    sign_in(page, live_server_url, "owner@example.com", then=f"/chat/{conversation.pk}/")

    code = page.locator(".answer pre.code-block code.hljs")
    code.wait_for()
    assert code.get_attribute("data-language") == "python"
    assert code.locator(".hljs-keyword").first.text_content() == "def"  # highlighted, not just a grey box
    copy = page.locator(".answer pre.code-block [data-copy]")
    assert copy.text_content() == "Copy"
    copy.tap() if width < 500 else copy.click()
    page.wait_for_function("() => document.querySelector('[data-copy]').textContent === 'Copied'")
    assert page.evaluate("() => navigator.clipboard.readText()") == "def greet(name):\n    return f'hi {name}'"

    cells = page.locator(".answer .table-wrap table td").all_text_contents()
    assert cells == ["EU", "3", "US", "5"]

    figure = page.locator("figure[data-generated=image]")
    img = figure.locator("img")
    assert img.get_attribute("src") == f"/api/v1/generated/{image.filename}"
    page.wait_for_function("() => document.querySelector('figure[data-generated=image] img').naturalWidth === 1")
    assert figure.get_by_role("link", name="Download").get_attribute("href") == (
        f"/api/v1/generated/{image.filename}?download=1")
    # A visual is drawn again when the conversation is reopened, in the applications' sandbox.
    frame = page.locator("[data-visual] iframe")
    assert frame.get_attribute("sandbox") == "allow-scripts"
    assert page.frame_locator("[data-visual] iframe").locator("circle").count() == 1
    # At a phone's width the page never scrolls sideways: a wide code block or table scrolls inside itself.
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    page.screenshot(path=str(ARTIFACTS / f"turn-renderer-code-table-image-{width}.png"), full_page=True)
    assert errors == []


@pytest.mark.browser
@pytest.mark.parametrize("width", [1440, 390])
def test_an_approval_decided_on_the_approvals_page_reaches_a_chat_tab_reloaded_while_the_run_waited(
    live_server_url, browser, width
):
    org = factories.organization(name="Acme")
    approver = member(org, "approver@example.com")
    factories.published_agent(org, approver, name="Gated", capabilities=[
        {"id": "charts", "tool_approval": {"create_chart": "required"}}, {"id": "clock"}])

    context = browser.new_context(viewport={"width": width, "height": 900})
    chat = context.new_page()
    chat.set_default_timeout(TIMEOUT)
    errors = console_errors(chat)
    sign_in(chat, live_server_url, "approver@example.com")
    chat.goto(f"{live_server_url}/chat/")
    chat.get_by_label("Message").fill("Draw a chart please")
    chat.get_by_role("button", name="Send").click()
    chat.wait_for_selector("[data-approval]")
    chat.wait_for_function("() => location.pathname !== '/chat/'")
    chat.reload()  # the new page's socket never took part in the run
    chat.wait_for_selector("[data-approval]")

    approvals = context.new_page()
    approvals.set_default_timeout(TIMEOUT)
    approvals.goto(f"{live_server_url}/approvals/")
    approvals.get_by_role("button", name="Approve").click()
    approvals.wait_for_selector(".flash")

    # Nobody touches the chat tab: the decision and the continuation arrive by themselves.
    chat.wait_for_selector("svg.chart-svg")
    chat.wait_for_function("() => !document.querySelector('[data-approval]') && "
                           "document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    assert chat.locator("[data-step]").last.get_attribute("data-status") == "ok"
    assert chat.locator("[data-decision]").count() == 0
    chat.screenshot(path=str(ARTIFACTS / f"turn-renderer-approval-elsewhere-{width}.png"), full_page=True)
    assert errors == []


@pytest.mark.browser
@pytest.mark.parametrize("width", [1440, 390])
def test_a_stale_approval_card_says_what_was_decided_without_a_failed_request(live_server_url, browser, width):
    from governance.models import Approval

    org = factories.organization(name="Acme")
    approver = member(org, "approver@example.com")
    factories.published_agent(org, approver, name="Gated", capabilities=[
        {"id": "charts", "tool_approval": {"create_chart": "required"}}, {"id": "clock"}])
    chat = browser.new_page(viewport={"width": width, "height": 900})
    chat.set_default_timeout(TIMEOUT)
    errors = console_errors(chat)
    sign_in(chat, live_server_url, "approver@example.com")
    chat.goto(f"{live_server_url}/chat/")
    chat.get_by_label("Message").fill("Draw a chart please")
    # The parked turn ends with the stored transcript read back (turns.json), which draws the card again: click
    # the card drawn from it, not the one it replaces (a click on a replaced node goes nowhere).
    with chat.expect_response(lambda r: r.url.endswith("/turns.json")):
        chat.get_by_role("button", name="Send").click()
    chat.wait_for_selector("[data-approval]")
    chat.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert chat.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    # Decided behind the tab's back, with no broadcast: the card this tab shows is now stale.
    assert Approval.objects.filter(organization=org, status="pending").update(status="approved") == 1
    chat.get_by_role("button", name="Approve").click()
    chat.wait_for_selector(".notice:has-text('This call was already approved.')")
    chat.wait_for_function("() => !document.querySelector('[data-approval]')")
    assert errors == []  # a 409 here was a console error in Chromium


async def test_only_a_member_of_the_runs_organization_follows_it_and_hears_its_decision():
    from channels.db import database_sync_to_async

    from agenticos.tenancy import actor_for_membership
    from agents.models import Run
    from governance import services as governance
    from governance.models import Approval
    from tests.runner.test_chat_socket import connect

    def setup():
        org, other = factories.organization(name="Acme"), factories.organization(name="Other")
        owner, outsider = member(org, "owner@example.com"), member(other, "outsider@example.com")
        agent = factories.published_agent(org, owner, name="Gated")
        run = Run.objects.create(organization=org, agent=agent, version=agent.environments.get(name="production").version,
                                 surface="web", prompt="Chart it", user=owner, status="awaiting_approval")
        approval = Approval.objects.create(organization=org, run=run, tool_call_id="c1", tool_id="create_chart",
                                           tool_name="create_chart")
        return org, other, owner, outsider, run, approval

    org, other, owner, outsider, run, approval = await database_sync_to_async(setup)()
    stranger, connected = await connect(outsider, other)
    assert connected
    await stranger.send_json_to({"type": "watch", "run_id": str(run.pk)})
    refused = json.loads(await stranger.receive_from(timeout=5))
    assert refused["type"] == "error" and refused["data"]["code"] == "not_found"

    watcher, connected = await connect(owner, org)
    assert connected
    await watcher.send_json_to({"type": "watch", "run_id": str(run.pk)})
    await watcher.receive_nothing(timeout=0.3)  # joined, nothing to say

    def decide():
        actor = actor_for_membership(owner.memberships.get(organization=org))
        governance.decide_approval(actor=actor, approval=approval, decision="reject")

    await database_sync_to_async(decide)()
    heard = json.loads(await watcher.receive_from(timeout=5))
    assert heard == {"type": "approval_decided", "data": {"approval_id": str(approval.pk), "run_id": str(run.pk),
                                                          "status": "rejected"}}
    assert await stranger.receive_nothing(timeout=0.3)  # the outsider never joined that run
    await watcher.disconnect()
    await stranger.disconnect()


async def test_a_run_that_ended_before_the_watch_sends_its_ending_to_the_watcher():
    """A page read the run as going on, and it ended before the page's socket joined it: nothing more will be sent
    on its group, so the watch itself answers with the ending, rebuilt from the run's row."""
    from channels.db import database_sync_to_async

    from agents.models import Run
    from tests.runner.test_chat_socket import connect

    def setup():
        org, other = factories.organization(name="Acme"), factories.organization(name="Other")
        owner = member(org, "owner@example.com")
        colleague = member(org, "colleague@example.com", role="member")  # no runs:view, not the run's author
        outsider = member(other, "outsider@example.com")
        agent = factories.published_agent(org, owner, name="Quick")
        run = Run.objects.create(organization=org, agent=agent, version=agent.environments.get(name="production").version,
                                 surface="web", prompt="Hello", user=owner, status="completed", output="Hi there.",
                                 input_tokens=12, output_tokens=3)
        return org, other, owner, colleague, outsider, run

    org, other, owner, colleague, outsider, run = await database_sync_to_async(setup)()
    # Nobody who may not read the run gets its ending (its output) by watching it.
    for user, organization in ((outsider, other), (colleague, org)):
        stranger, connected = await connect(user, organization)
        assert connected
        await stranger.send_json_to({"type": "watch", "run_id": str(run.pk)})
        refused = json.loads(await stranger.receive_from(timeout=5))
        assert refused["type"] == "error" and refused["data"]["code"] == "not_found"
        assert await stranger.receive_nothing(timeout=0.3)
        await stranger.disconnect()

    watcher, connected = await connect(owner, org)
    assert connected
    await watcher.send_json_to({"type": "watch", "run_id": str(run.pk)})
    answer = json.loads(await watcher.receive_from(timeout=5))
    ending = json.loads(await watcher.receive_from(timeout=5))
    assert answer == {"type": "final_result", "data": {"output": "Hi there."}}
    assert ending["type"] == "complete" and ending["data"]["status"] == "completed"
    assert ending["data"]["usage"]["input_tokens"] == 12
    await watcher.disconnect()


def test_every_english_default_of_the_turn_renderer_is_a_translatable_chat_string():
    """turn.js falls back to its own English for a key web chat does not pass: such a key is never translated."""
    import re
    from pathlib import Path

    from django.utils import translation

    from console.strings import chat_strings

    source = (Path(__file__).resolve().parents[2] / "console/static/console/turn.js").read_text(encoding="utf-8")
    block = source[source.index("var STRINGS = {"):source.index("};", source.index("var STRINGS = {"))]
    defaults = dict(re.findall(r'(\w+): "((?:[^"\\]|\\.)*)"', block))
    assert {"copy", "copied", "copy_code", "download", "summarizing"} <= defaults.keys()
    with translation.override("en"):
        strings = chat_strings()
    assert {key: strings.get(key) for key in defaults} == defaults
