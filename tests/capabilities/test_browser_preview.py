"""The chat's preview of a browse (the browser binding's `preview` and `preview_width`), against Debian's Chromium and
local pages: with `preview` on, the browse's view socket in preview mode (`?preview=1`, what the chat card opens)
gets the page's frames while it browses — `preview_width` wide — and that it ended, nothing else, and only for who
may watch the live view; with `preview` off it is refused while the live view page still gets the frames, so no
frame reaches the chat."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from PIL import Image

from agents.models import RunStatus
from capabilities.browser import live
from capabilities.browser.config import BrowserConfig
from capabilities.browser.consumers import CLOSE_REFUSED
from config.asgi import application
from tests import factories
from tests.capabilities.test_browser_browse import browsing_agent, step, tool_results
from tests.capabilities.test_browser_live import in_background, next_of, open_view
from tests.fakes.openai_server import Reply, fake_openai  # noqa: F401
from tests.fakes.web_pages import SITE, browser_env, chromium, site  # noqa: F401
from tests.runner.test_chat_socket import session_cookie

pytestmark = [pytest.mark.browser]
browse = pytest.mark.django_db(transaction=True)

CALL = "call_preview_1"
TIMEOUT = 30


async def open_preview(user, org, run_id, call_id=CALL):
    cookie = await database_sync_to_async(session_cookie)(user, org)
    communicator = WebsocketCommunicator(application, f"/ws/browse/{run_id}/{call_id}/?preview=1",
                                         headers=[(b"cookie", cookie.encode())])
    connected, code = await communicator.connect(timeout=TIMEOUT)
    return communicator, connected, code


def needing_a_person(fake_openai, url: str) -> None:
    """A browse that asks for a person and waits (the test takes the tab and hands it back), then finishes."""
    fake_openai.queue(
        Reply.tool_call("browse_web", {"task": "Check the form", "start_url": url}, id=CALL),
        step("ask_human", answer="Someone must check the form."),
        step("done", answer="Checked."),
        Reply.text("Done."),
    )


async def take_and_hand_back(view) -> None:
    await view.send_json_to({"type": "take"})
    assert (await next_of(view, "control"))["mine"] is True
    await view.send_json_to({"type": "release"})
    assert (await next_of(view, "control"))["holder"] is None


def test_preview_is_a_setting_of_the_binding_on_by_default():
    assert BrowserConfig(cdp_url="http://browser:9222").preview is True
    assert BrowserConfig(cdp_url="http://browser:9222", preview=False).preview is False


@browse
def test_the_chat_preview_gets_the_frames_preview_width_wide_while_it_browses_and_nothing_else(
        org, owner, outsider, outsider_org, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env, preview_width=480)
    needing_a_person(fake_openai, f"http://{SITE}:{site.port}/form")
    colleague = factories.member(org, role="member")  # may not read this person's runs
    admin = factories.member(org, role="admin")  # may read them: watches, as on the live view
    from tests.runner.test_execute import start

    run = start(org, owner, agent, version, prompt="check the form")
    worker = in_background(run)

    async def watch() -> list[str]:
        view, connected, _ = await open_view(owner, org, run.pk, CALL)
        assert connected
        await next_of(view, "hello")
        await next_of(view, "agent", state="needs_person")  # the browse is live and waits
        preview, connected, _ = await open_preview(owner, org, run.pk)
        assert connected
        hello = await next_of(preview, "hello")
        assert hello["live"] is True and hello["ended"] is False
        assert set(hello) == {"live", "ended", "frame"}  # no steps, no control: a picture only
        shot = hello["frame"] or await next_of(preview, "frame")
        assert shot["width"] == 480
        assert Image.open(io.BytesIO(live.frame_bytes(shot))).size[0] == 480
        for who, their_org in ((colleague, org), (outsider, outsider_org)):
            _refused, connected, code = await open_preview(who, their_org, run.pk)
            assert not connected and code == CLOSE_REFUSED
        watcher, connected, _ = await open_preview(admin, org, run.pk)
        assert connected
        await watcher.disconnect()
        await preview.send_json_to({"type": "take"})  # the preview only watches
        assert (await next_of(preview, "error"))["code"] == "bad_frame"
        assert live.controller(run.pk, CALL) is None
        await take_and_hand_back(view)
        seen: list[str] = []
        while True:
            payload = json.loads(await preview.receive_from(timeout=TIMEOUT))
            seen.append(payload["type"])
            if payload["type"] == "ended":
                break
        await preview.disconnect()
        await next_of(view, "ended")
        await view.disconnect()
        # Over: a chat that opens the preview now is refused, it has nothing to show.
        late, connected, _ = await open_preview(owner, org, run.pk)
        assert connected  # accepted, then closed at once: a refused handshake is a console error in the chat
        closed = await late.receive_output(timeout=TIMEOUT)
        assert closed["type"] == "websocket.close" and closed["code"] == CLOSE_REFUSED
        return seen

    seen = asyncio.run(watch())
    worker.join(timeout=120)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert set(seen) <= {"frame", "ended"}  # no step, agent or control frame reached the chat
    [result] = tool_results(run)
    assert result["outcome"] == "done"


@browse
def test_with_preview_off_no_frame_reaches_the_chat_and_the_live_view_still_shows_the_page(
        org, owner, fake_openai, browser_env, site):
    agent, version = browsing_agent(org, owner, fake_openai, browser_env, preview=False)
    needing_a_person(fake_openai, f"http://{SITE}:{site.port}/form")
    from tests.runner.test_execute import start

    run = start(org, owner, agent, version, prompt="check the form")
    worker = in_background(run)

    async def watch() -> None:
        view, connected, _ = await open_view(owner, org, run.pk, CALL)
        assert connected
        hello = await next_of(view, "hello")
        assert hello["frame"] is not None or await next_of(view, "frame")  # the live view page gets the frames
        await next_of(view, "agent", state="needs_person")
        assert live.is_live(run.pk, CALL)
        off, connected, _ = await open_preview(owner, org, run.pk)
        assert connected
        closed = await off.receive_output(timeout=TIMEOUT)
        assert closed["type"] == "websocket.close" and closed["code"] == CLOSE_REFUSED
        await take_and_hand_back(view)
        await next_of(view, "ended")
        await view.disconnect()

    asyncio.run(watch())
    worker.join(timeout=120)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert tool_results(run)[0]["outcome"] == "done"
