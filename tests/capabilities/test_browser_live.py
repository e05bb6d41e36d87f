"""The live view of a browse (`/browse/{run_id}/{call_id}` and its socket), against Debian's Chromium and local
pages: the person sees the page as frames and the steps so far, takes the tab (the agent pauses after its current
step, and a browse that needs a person waits for one), types on the page through the view, hands it back and the
agent goes on from the page as left; what they typed is kept nowhere. Outsiders and members who cannot read the
run get a 404 page and a socket closed with 4003."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from agenticos.models import AuditEvent
from agenticos.tenancy import SESSION_KEY as ORG_SESSION_KEY
from agents.models import RunStatus
from capabilities.browser import live
from capabilities.browser.consumers import CLOSE_REFUSED
from config.asgi import application
from tests import factories
from tests.capabilities.test_browser_browse import browsing_agent, step, tool_results
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, site  # noqa: F401
from tests.runner.test_chat_socket import session_cookie
from tests.runner.test_execute import run_now, start

pytestmark = [pytest.mark.browser]
browse = pytest.mark.django_db(transaction=True)

CALL = "call_live_1"
TIMEOUT = 30


async def open_view(user, org, run_id, call_id=CALL):
    cookie = await database_sync_to_async(session_cookie)(user, org)
    communicator = WebsocketCommunicator(application, f"/ws/browse/{run_id}/{call_id}/",
                                         headers=[(b"cookie", cookie.encode())])
    connected, code = await communicator.connect(timeout=TIMEOUT)
    return communicator, connected, code


async def next_of(communicator, kind: str, **match) -> dict:
    """The next frame of `kind` (matching `match`); frames of other kinds before it are passed over."""
    seen = []

    async def wait() -> dict:
        while True:
            payload = json.loads(await communicator.receive_from(timeout=TIMEOUT))
            if payload["type"] == kind and all(payload["data"].get(k) == v for k, v in match.items()):
                return payload["data"]
            seen.append(payload["type"] if payload["type"] == "frame" else payload)

    try:
        return await asyncio.wait_for(wait(), TIMEOUT)
    except TimeoutError:
        raise AssertionError(f"no {kind} {match} frame; saw {seen[-20:]}") from None


def in_background(run) -> threading.Thread:
    thread = threading.Thread(target=run_now, args=(run,), daemon=True)
    thread.start()
    return thread


@browse
def test_the_person_watches_takes_over_types_and_hands_back_and_the_agent_goes_on(org, owner, fake_openai,
                                                                                browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    url = f"http://{SITE}:{site.port}/form"
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Send the contact form", "start_url": url}, id=CALL),
        step("ask_human", answer="Someone must type the name."),
        step("done", answer="A person typed the name."),
        Reply.text("Done."),
    )
    run = start(org, owner, agent, version, prompt="send the form")
    worker = in_background(run)

    async def person() -> tuple[int, int]:
        view, connected, _ = await open_view(owner, org, run.pk)
        assert connected
        hello = await next_of(view, "hello")
        assert hello["can_control"] is True
        shot = await next_of(view, "frame")
        assert live.frame_bytes(shot)[:2] == b"\xff\xd8"  # a JPEG of the page
        needs = await next_of(view, "agent", state="needs_person")
        assert needs["reason"] == "Someone must type the name."
        await view.send_json_to({"type": "take"})
        assert (await next_of(view, "control"))["mine"] is True
        asked_at_take = len(fake_openai.chat_requests)
        for event in ({"kind": "key", "key": "Tab"}, {"kind": "text", "text": "Grace"}):
            await view.send_json_to({"type": "input", "event": event})
        # Handed back at once: the release travels behind the keystrokes, so none of them is lost.
        asked_before_release = len(fake_openai.chat_requests)
        await view.send_json_to({"type": "release"})
        assert (await next_of(view, "control"))["holder"] is None
        await next_of(view, "ended")
        await view.disconnect()
        return asked_at_take, asked_before_release

    asked_at_take, asked_before_release = asyncio.run(person())
    worker.join(timeout=120)
    run.refresh_from_db()

    assert run.status == RunStatus.COMPLETED, run.error
    assert asked_at_take == asked_before_release == 2  # the agent asked nothing while the person had the tab
    [result] = tool_results(run)
    assert result["outcome"] == "done" and result["live_url"] == f"/browse/{run.pk}/{CALL}"
    assert any("a person took control" in line for line in result["history"])
    after = fake_openai.chat_requests[2].text
    assert "[1] text 'Name' (filled)" in after  # the agent goes on from the page as the person left it
    everything = json.dumps([r.json for r in fake_openai.chat_requests]) + json.dumps(result)
    assert "Grace" not in everything  # what a person types reaches the page and nothing else
    assert "Grace" not in json.dumps(live.snapshot(run.pk, CALL)["steps"])
    # The take-over is on the organization's audit trail: who, which run's browse; never what they typed.
    trail = AuditEvent.objects.filter(organization=org, action__startswith="browser.").order_by("created_at")
    assert [(e.action, e.actor, e.target_type, e.target_id, e.details) for e in trail] == [
        ("browser.taken_over", owner, "run", str(run.pk), {"call_id": CALL}),
        ("browser.handed_back", owner, "run", str(run.pk), {"call_id": CALL})]
    assert "Grace" not in json.dumps([e.details for e in trail])


@browse
def test_taking_over_pauses_the_agent_after_its_current_step(org, owner, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    url = f"http://{SITE}:{site.port}/flow/1"
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Look around", "start_url": url}, id=CALL),
        # The first step's answer takes a while, so the person's take lands while that step is under way.
        Reply.tool_calls([{"name": "step", "arguments": {"evaluation": "start", "memory": "", "next_goal": "look",
                                                         "action": "scroll", "direction": "down"}}], delay=2.0),
        step("done", answer="Looked."),
        Reply.text("Done."),
    )
    run = start(org, owner, agent, version, prompt="look")

    async def person() -> tuple[int, int]:
        view, connected, _ = await open_view(owner, org, run.pk)
        assert connected
        await next_of(view, "hello")
        await next_of(view, "frame")  # the browse is live
        await view.send_json_to({"type": "take"})
        control = await next_of(view, "control")
        assert control["mine"] is True
        await next_of(view, "agent", state="paused")
        paused_at = len(fake_openai.chat_requests)
        await view.send_json_to({"type": "input", "event": {"kind": "scroll", "x": 10, "y": 10, "dy": 200}})
        await view.send_json_to({"type": "take"})  # a second take while holding it is refused, changes nothing
        assert (await next_of(view, "error"))["code"] == "conflict"
        still = len(fake_openai.chat_requests)
        await view.disconnect()  # closing the view while holding the tab hands it back
        watcher, connected, _ = await open_view(owner, org, run.pk)
        assert connected
        if not (await next_of(watcher, "hello"))["ended"]:  # the agent went on and finished
            await next_of(watcher, "ended")
        await watcher.disconnect()
        return paused_at, still

    worker = in_background(run)
    paused_at, still = asyncio.run(person())
    worker.join(timeout=120)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert paused_at == still  # no step was asked while the person held the tab
    [result] = tool_results(run)
    assert result["outcome"] == "done"
    assert any("a person took control" in line for line in result["history"])


@browse
def test_who_cannot_read_the_run_gets_404_and_a_refused_socket(org, owner, outsider, outsider_org, fake_openai,
                                                               browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env)
    fake_openai.queue(Reply.text("Nothing to browse."))
    run = start(org, owner, agent, version, prompt="hi")
    run_now(run)
    colleague = factories.member(org, role="member")
    admin = factories.member(org, role="admin")
    path = live.live_path(run.pk, CALL)

    pages = {}
    for who, their_org in ((owner, org), (admin, org), (colleague, org), (outsider, outsider_org)):
        client = Client()
        client.force_login(who)
        session = client.session
        session[ORG_SESSION_KEY] = str(their_org.pk)
        session.save()
        pages[who.pk] = client.get(path)
    assert pages[owner.pk].status_code == 200 and f"/ws/browse/{run.pk}/{CALL}/" in pages[owner.pk].text
    assert pages[admin.pk].status_code == 200
    assert pages[colleague.pk].status_code == 404 and pages[outsider.pk].status_code == 404

    async def sockets() -> None:
        for who, their_org in ((colleague, org), (outsider, outsider_org)):
            _view, connected, code = await open_view(who, their_org, run.pk)
            assert not connected and code == CLOSE_REFUSED
        view, connected, _ = await open_view(owner, org, run.pk)
        assert connected
        hello = await next_of(view, "hello")
        assert hello["live"] is False and hello["frame"] is None
        await view.send_json_to({"type": "take"})  # no live browse under that id: nothing to take
        assert (await next_of(view, "error"))["code"] == "conflict"
        assert await view.receive_nothing(timeout=0.3)
        await view.disconnect()

    asyncio.run(sockets())
    assert live.controller(run.pk, CALL) is None
    # Refused sockets and a take that took nothing leave no audit event of a take-over.
    assert not AuditEvent.objects.filter(action__startswith="browser.").exists()


def test_the_page_gets_only_clicks_wheel_text_and_the_listed_keys_within_bounds():
    assert live.input_commands({"kind": "key", "key": "F12"}) == []  # only the listed keys
    assert live.input_commands({"kind": "eval", "text": "alert(1)"}) == []
    [(command, params)] = live.input_commands({"kind": "text", "text": "x" * 5000})
    assert command == "Input.insertText" and len(params["text"]) == live.MAX_TEXT_EVENT
    click = live.input_commands({"kind": "click", "x": "-5", "y": 1e9})
    assert click[1][1]["x"] == 0 and click[1][1]["y"] == 10000


@pytest.mark.django_db
def test_the_agents_own_tools_share_one_live_view_whose_steps_never_hold_a_typed_value(browser_env, site):
    from capabilities.browser.live import _client
    from tests.capabilities.helpers import run
    from tests.capabilities.test_browser_tools import browser_spec

    url = f"http://{SITE}:{site.port}/form"
    asyncio.run(run(browser_spec(browser_env), [
        ("browser_open", {"url": url}),
        ("browser_type", {"element": 1, "text": "Ada"}),
        ("browser_click", {"element": 4}),
    ]))
    [steps_key] = _client().keys("*browse-live*:steps")  # one view, opened by the first browser_open
    steps = [line.decode() for line in _client().lrange(steps_key, 0, -1)]
    assert steps == [f"Opened {url}.", "Typed into [1].", "Clicked [4]."]
    run_id, call_id = steps_key.decode().split(":")[-3:-1]
    assert live.snapshot(run_id, call_id)["ended"] is True  # the view ended with the run's browser
