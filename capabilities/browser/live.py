"""The live view of a browse (`/browse/{run_id}/{call_id}`): the page as it is now, the steps so far, and a person
who may take the tab over.

The worker that owns the browser session is the only process that can see or touch the page, so it publishes and
the console only relays (`consumers.py`):
- frames: Chromium's own screencast (`Page.startScreencast` on a CDP session of the agent's tab) is sent to the
  channel-layer group of the browse (`view_group`) and the last one is kept in Redis, so a view opened late
  shows the page at once;
- steps: each line of the browse's history as it is written, kept in Redis beside the frame;
- control: a Redis key holding who has the tab (set only by the socket, for the run's person or an editor of
  the agent), for at most `CONTROL_SECONDS`. The agent checks it between steps (`hold`): while it is held, it
  waits. What the person does on the view comes to the worker through a second group (`input_group`) that only
  the worker listens to, and is dispatched to the page with CDP `Input.*`. The worker checks again that the
  sender holds the tab; what is typed goes to the page and nowhere else (never logged, never kept).
All of it lives an hour after the browse's last action (`TTL`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
from typing import Any

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

TTL = 3600
CONTROL_SECONDS = 15 * 60
# How long a browse that needs a person waits for one to take the tab (and then for them to hand it back).
NEEDS_PERSON_SECONDS = 10 * 60
POLL_SECONDS = 0.5
MAX_STEPS_KEPT = 200
FRAME_QUALITY = 60
# Keys a person may press on the view besides typing text (which goes as Input.insertText).
KEY_CODES = {"Enter": 13, "Backspace": 8, "Tab": 9, "Escape": 27, "Delete": 46, "ArrowLeft": 37, "ArrowUp": 38,
             "ArrowRight": 39, "ArrowDown": 40, "Home": 36, "End": 35, "PageUp": 33, "PageDown": 34}
MAX_TEXT_EVENT = 500


def live_path(run_id: Any, call_id: str) -> str:
    return f"/browse/{run_id}/{call_id}"


def _safe(call_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", str(call_id))[:64]


def view_group(run_id: Any, call_id: str) -> str:
    return f"browse-view.{run_id}.{_safe(call_id)}"


def input_group(run_id: Any, call_id: str) -> str:
    return f"browse-input.{run_id}.{_safe(call_id)}"


def key(run_id: Any, call_id: str, part: str) -> str:
    from agenticos import ratelimit

    return ratelimit.redis_name("browse-live", str(run_id), _safe(call_id), part)


def _client() -> Any:
    from agenticos import ratelimit

    return ratelimit.client()


def frame(type_: str, **data: Any) -> dict[str, Any]:
    return {"type": type_, "data": data}


# ------------------------------------------------------------------ state kept in Redis (sync: run in a thread)


def controller(run_id: Any, call_id: str) -> dict[str, Any] | None:
    raw = _client().get(key(run_id, call_id, "control"))
    if not raw:
        return None
    try:
        holder = json.loads(raw)
    except ValueError:
        return None
    return holder if isinstance(holder, dict) else None


def take_control(run_id: Any, call_id: str, *, user_id: int, label: str) -> bool:
    """The tab for this person, unless someone has it or the browse is not live. At most CONTROL_SECONDS."""
    client = _client()
    if not client.exists(key(run_id, call_id, "live")):
        return False
    if not client.set(key(run_id, call_id, "control"), json.dumps({"user_id": user_id, "label": label}),
                      nx=True, ex=CONTROL_SECONDS):
        return False
    # Counted too: a take handed back before the agent next looked still pauses it and answers "needs a person".
    client.incr(key(run_id, call_id, "takes"))
    client.expire(key(run_id, call_id, "takes"), TTL)
    return True


def is_live(run_id: Any, call_id: str) -> bool:
    """Whether a worker is browsing this call now (and so listens on its input group)."""
    raw = _client().get(key(run_id, call_id, "live"))
    return bool(raw) and not json.loads(raw).get("ended")


def previewable(run_id: Any, call_id: str) -> bool:
    """Whether the chat may show this browse's frames: it is running and its binding's `preview` is on. With
    `preview` off no frame reaches the chat; the live view page still shows them."""
    raw = _client().get(key(run_id, call_id, "live"))
    meta = json.loads(raw) if raw else {}
    return bool(meta) and not meta.get("ended") and bool(meta.get("preview", True))


def takes(run_id: Any, call_id: str) -> int:
    return int(_client().get(key(run_id, call_id, "takes")) or 0)


def audit_control(actor: Any, run: Any, call_id: str, action: str, ip_address: str | None) -> None:
    """A person took the agent's browser (`browser.taken_over`) or handed it back (`browser.handed_back`): who,
    which run's browse, from where — never what they typed."""
    from agenticos import audit

    audit.record(actor=actor.user, organization=actor.organization, action=action, target=run,
                 target_name=f"{run.agent.name} run {run.pk}", details={"call_id": call_id}, ip_address=ip_address)


def release_control(run_id: Any, call_id: str, *, user_id: int) -> bool:
    holder = controller(run_id, call_id)
    if holder is None or holder.get("user_id") != user_id:
        return False
    _client().delete(key(run_id, call_id, "control"))
    return True


def snapshot(run_id: Any, call_id: str) -> dict[str, Any]:
    """What a view opened now shows: whether the browse is live, its last frame, its steps so far and what the
    agent last said it was doing (paused, resumed, needs a person)."""
    client = _client()
    live = client.get(key(run_id, call_id, "live"))
    last = client.get(key(run_id, call_id, "frame"))
    agent = client.get(key(run_id, call_id, "agent"))
    steps = [s.decode() if isinstance(s, bytes) else s for s in client.lrange(key(run_id, call_id, "steps"), 0, -1)]
    meta = json.loads(live) if live else None
    return {"live": meta is not None, "ended": bool(meta and meta.get("ended")), "steps": steps,
            "frame": json.loads(last) if last else None, "agent": json.loads(agent) if agent else None}


# ------------------------------------------------------------------ the worker's side


def _own_layer() -> Any:
    """A channel layer of this browse's own: it receives on the browse's input channel from the worker's loop,
    and a layer's receive lock belongs to the loop that first received on it (a process sharing one layer
    between loops — the test process, a worker with more than one — would wait on another loop's lock)."""
    from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers

    try:
        return channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
    except Exception:  # no channel layer configured: the browse goes on without a live view
        logger.warning("no channel layer for the live browse view", exc_info=True)
        return None



class LiveView:
    """One browse's live view, run by the worker holding the tab."""

    def __init__(self, run_id: Any, call_id: str, *, preview: bool = True) -> None:
        self.run_id = str(run_id)
        self.call_id = str(call_id)
        self.preview = preview  # the binding's `preview`: whether the chat may show these frames (`previewable`)
        self.path = live_path(run_id, call_id)
        self.layer = _own_layer()
        self._cdp: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._channel: str | None = None
        self._published = 0
        self._takes_seen = 0
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self, context: Any, page: Any) -> None:
        await asyncio.to_thread(self._mark, ended=False)
        self._takes_seen = await asyncio.to_thread(takes, self.run_id, self.call_id)
        if self.layer is not None:
            self._channel = await self.layer.new_channel()
            await self.layer.group_add(input_group(self.run_id, self.call_id), self._channel)
            self._listener = asyncio.ensure_future(self._listen())
        self._cdp = await context.new_cdp_session(page)
        self._cdp.on("Page.screencastFrame", lambda event: self._spawn(self._on_frame(event)))
        size = page.viewport_size or {}
        await self._cdp.send("Page.startScreencast", {"format": "jpeg", "quality": FRAME_QUALITY,
                                                      "maxWidth": int(size.get("width", 1024)),
                                                      "maxHeight": int(size.get("height", 768))})

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._mark, ended=True)
        await self._send(frame("ended"))
        if self._cdp is not None:
            with contextlib.suppress(Exception):
                await self._cdp.send("Page.stopScreencast")
                await self._cdp.detach()
        self._cdp = None
        if self._listener is not None:
            self._listener.cancel()
            # A receive being cancelled may take its time to let go of the layer; the browse does not wait on it.
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._listener), 2)
        if self.layer is not None and self._channel is not None:
            with contextlib.suppress(Exception):
                await self.layer.group_discard(input_group(self.run_id, self.call_id), self._channel)
        close = getattr(self.layer, "close_pools", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _mark(self, *, ended: bool) -> None:
        client = _client()
        client.set(key(self.run_id, self.call_id, "live"), json.dumps({"ended": ended, "preview": self.preview}),
                   ex=TTL)
        for part in ("frame", "steps"):
            client.expire(key(self.run_id, self.call_id, part), TTL)

    async def _send(self, payload: dict[str, Any]) -> None:
        if self.layer is None:
            return
        try:
            await self.layer.group_send(view_group(self.run_id, self.call_id),
                                        {"type": "browse.frame", "frame": payload})
        except Exception:  # a lost channel layer must not stop the browse
            logger.warning("could not publish a live browse frame", exc_info=True)

    async def _on_frame(self, event: dict[str, Any]) -> None:
        cdp = self._cdp
        if cdp is None:
            return
        try:
            await cdp.send("Page.screencastFrameAck", {"sessionId": event["sessionId"]})
        except Exception:
            logger.debug("screencast ack", exc_info=True)
        meta = event.get("metadata") or {}
        payload = frame("frame", jpeg=event["data"], width=meta.get("deviceWidth"), height=meta.get("deviceHeight"))
        with contextlib.suppress(Exception):
            await asyncio.to_thread(_client().set, key(self.run_id, self.call_id, "frame"),
                                    json.dumps(payload["data"]), ex=TTL)
        await self._send(payload)

    # ---------------------------------------------------------------- steps and control

    async def publish_steps(self, history: list[str]) -> None:
        """The history lines written since the last call, to the view and to Redis."""
        new, self._published = history[self._published:], len(history)
        for line in new:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._keep_step, line)
            await self._send(frame("step", line=line))

    async def note(self, line: str) -> None:
        """One action of the agent's own tools, as a step of the view (never a typed value: the tools' notes
        say only which field was filled)."""
        self._published += 1
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._keep_step, line)
        await self._send(frame("step", line=line))

    def _keep_step(self, line: str) -> None:
        client = _client()
        name = key(self.run_id, self.call_id, "steps")
        client.rpush(name, line)
        client.ltrim(name, -MAX_STEPS_KEPT, -1)
        client.expire(name, TTL)
        client.expire(key(self.run_id, self.call_id, "live"), TTL)

    async def _agent(self, state: str, **data: Any) -> None:
        """What the agent is doing now, to the views and kept for a view opened later."""
        payload = frame("agent", state=state, **data)
        with contextlib.suppress(Exception):
            await asyncio.to_thread(_client().set, key(self.run_id, self.call_id, "agent"),
                                    json.dumps(payload["data"]), ex=TTL)
        await self._send(payload)

    async def controlled(self) -> bool:
        try:
            return await asyncio.to_thread(controller, self.run_id, self.call_id) is not None
        except Exception:  # Redis away: nobody can hold the tab either
            return False

    async def hold(self) -> bool:
        """Between two steps: while a person has the tab, wait for them to hand it back (at most
        CONTROL_SECONDS, the key's own life). True when someone had it since the last look."""
        if not await self._taken() and not await self.controlled():
            return False
        await self._agent("paused")
        while await self.controlled():
            await asyncio.sleep(POLL_SECONDS)
        await self._agent("resumed")
        return True

    async def _taken(self) -> bool:
        try:
            count = await asyncio.to_thread(takes, self.run_id, self.call_id)
        except Exception:
            return False
        taken, self._takes_seen = count > self._takes_seen, max(count, self._takes_seen)
        return taken

    async def wait_for_person(self, reason: str, seconds: float | None = None) -> bool:
        """Only a person can go on: wait up to NEEDS_PERSON_SECONDS for one to take the tab, then for them to
        hand it back. False when nobody came."""
        await self._agent("needs_person", reason=reason)
        await announce(self.run_id, self.call_id, "browser_needs_person", reason=reason)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (NEEDS_PERSON_SECONDS if seconds is None else seconds)
        while loop.time() < deadline:
            if await self.hold():
                return True
            await asyncio.sleep(POLL_SECONDS)
        return False

    # ---------------------------------------------------------------- a person's hands on the page

    async def _listen(self) -> None:
        assert self.layer is not None and self._channel is not None
        while True:
            message = await self.layer.receive(self._channel)
            if message.get("type") != "browse.input":
                continue
            try:
                await self._dispatch(message)
            except Exception:  # never the event itself: it may be what a person typed
                logger.debug("live view input not dispatched", exc_info=False)

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if message.get("release"):
            # Handed back through this same group, so it comes after every input the person sent before it:
            # releasing first would let the agent read the page before their last keystrokes reached it.
            if await asyncio.to_thread(release_control, self.run_id, self.call_id,
                                         user_id=int(message.get("user_id") or 0)):
                await self.layer.group_send(view_group(self.run_id, self.call_id),  # type: ignore[union-attr]
                                            {"type": "browse.control", "holder": None})
            return
        holder = await asyncio.to_thread(controller, self.run_id, self.call_id)
        if holder is None or holder.get("user_id") != message.get("user_id") or self._cdp is None:
            return
        for command, params in input_commands(message.get("event") or {}):
            await self._cdp.send(command, params)


def _number(value: Any, low: float, high: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return low
    return min(max(number, low), high)


def input_commands(event: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The CDP commands for one thing a person did on the view (page CSS pixels); nothing for anything else."""
    kind = event.get("kind")
    x, y = _number(event.get("x"), 0, 10000), _number(event.get("y"), 0, 10000)
    if kind == "click":
        base = {"x": x, "y": y, "button": "left", "clickCount": 1}
        return [("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}),
                ("Input.dispatchMouseEvent", {"type": "mousePressed", **base}),
                ("Input.dispatchMouseEvent", {"type": "mouseReleased", **base})]
    if kind == "scroll":
        return [("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0,
                                              "deltaY": _number(event.get("dy"), -5000, 5000)})]
    if kind == "text":
        text = str(event.get("text") or "")[:MAX_TEXT_EVENT]
        return [("Input.insertText", {"text": text})] if text else []
    if kind == "key" and event.get("key") in KEY_CODES:
        name = str(event["key"])
        down: dict[str, Any] = {"type": "keyDown", "key": name, "code": name, "windowsVirtualKeyCode": KEY_CODES[name]}
        if name == "Enter":
            down["text"] = "\r"
        return [("Input.dispatchKeyEvent", down),
                ("Input.dispatchKeyEvent", {"type": "keyUp", "key": name, "code": name,
                                            "windowsVirtualKeyCode": KEY_CODES[name]})]
    return []


async def announce(run_id: Any, call_id: str, kind: str = "browser_live", **data: Any) -> None:
    """Tell the run's followers — the chat card, a channel thread (channelbots/delivery.py) — where this browse's
    live view is (`browser_live`), or that only a person can go on and why (`browser_needs_person` {reason})."""
    from agents.run_handle import group_name

    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group_name(run_id), {"type": "run.frame", "frame": frame(
            kind, run_id=str(run_id), call_id=str(call_id), url=live_path(run_id, call_id), **data)})
    except Exception:
        logger.warning("could not announce a live browse", exc_info=True)


async def open_for(tab: Any, run_id: Any, call_id: str | None) -> LiveView | None:
    """The live view of this browse_web call on the tab (the previous call's view ends). None when the call has
    no id (a direct call outside a run) or the view cannot start; the browse goes on without it."""
    if not call_id or tab.page is None:
        return None
    if tab.live is not None:
        if tab.live.call_id == call_id:
            return tab.live
        await tab.live.stop()
        tab.live = None
    view = LiveView(run_id, call_id, preview=bool(getattr(getattr(tab, "config", None), "preview", True)))
    try:
        await view.start(tab.context, tab.page)
    except Exception:
        logger.warning("live browse view did not start", exc_info=True)
        await view.stop()
        return None
    tab.live = view
    await announce(run_id, call_id)
    return view


def frame_bytes(data: dict[str, Any]) -> bytes:
    """A kept frame's JPEG (for tests and tools that want the picture)."""
    return base64.b64decode(data["jpeg"])


def viewer_of(actor: Any, run_id: Any) -> tuple[Any, bool]:
    """The run whose browse this member may watch (their own, or any with runs:view; else NotFound, one answer
    for a run of another organization and one they may not see), and whether they may take the tab over: the
    run's person, or who can edit its agent."""
    from agents.access import member_run
    from governance.grants import EDIT, agent_access, at_least

    run = member_run(actor, run_id)
    if actor.user_id is not None and run.user_id == actor.user_id:
        return run, True
    level = agent_access(actor, run.agent)
    return run, bool(level and at_least(level, EDIT) and actor.has("agents:edit"))
