"""Live reply: a placeholder posted when the question arrives, edited about once a second with the
answer so far and what the agent is doing, and the final answer at the end.

Frames come from the run's channel-layer group. The subscription is made BEFORE the run starts (so no
frame is missed) on a layer instance of this delivery's own: it is opened on a short loop in the Celery
thread and read on the follows loop (`follow_async`, channelbots/follows.py), and a layer's receive machinery
must not be shared across event loops (its pools are closed in between).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection

from agenticos import metrics
from agents.run_handle import group_name
from agents.runner.frames import frames_in
from channelbots.platforms import PlatformClient, PlatformError

logger = logging.getLogger(__name__)

EDIT_INTERVAL_SECONDS = 1.0
PLACEHOLDER = "…"
ACTIVITY: dict[str, str] = {
    "web_search": "Searching the web…",
    "search_web": "Searching the web…",
    "web_fetch": "Reading a web page…",
    "create_chart": "Drawing a chart…",
    "run_python": "Running code…",
    "search_documents": "Searching the documents…",
    "search_conversations": "Searching past conversations…",
    "get_channel_info": "Looking at the channel…",
    "list_channel_members": "Looking at who is here…",
    "read_channel_history": "Reading the channel…",
}


def activity_for(tool_name: str) -> str:
    return ACTIVITY.get(tool_name, f"Using {tool_name.replace('_', ' ')}…")


def browse_note(kind: str, data: dict[str, Any]) -> str | None:
    """What a thread is told of a browse (capabilities/browser/live.py announces it to the run's group): where its
    live view is, and that only a person can go on, and why. The view is the console's page, which admits only
    members who may read the run, so the link shows nothing to anyone else in the channel."""
    path = str(data.get("url") or "")
    if not path.startswith("/browse/"):
        return None
    url = settings.FRONTEND_URL.rstrip("/") + path
    if kind == "browser_live":
        return f"Using a web browser. Watch it live: {url}"
    if kind == "browser_needs_person":
        reason = " ".join(str(data.get("reason") or "").split())[:500]
        return f"The agent needs a person in the browser: {reason} Take it over here: {url}".replace("  ", " ")
    return None


@dataclass
class Outcome:
    kind: str  # completed | awaiting | failed | cancelled | lost
    run_id: str
    text: str = ""
    status: str = ""
    message: str = ""
    usage: dict[str, Any] = field(default_factory=dict)


def _layer():
    from agenticos.channel_layer import RedisChannelLayer

    return RedisChannelLayer(**settings.CHANNEL_LAYERS["default"].get("CONFIG", {}))


class Subscription:
    """The run's group, joined before the run exists."""

    def __init__(self, run_id: Any):
        self.group = group_name(run_id)
        self.layer = _layer()
        self.channel = ""

    def open(self) -> None:
        async def go() -> None:
            self.channel = await self.layer.new_channel()
            await self.layer.group_add(self.group, self.channel)
            await self.layer.close_pools()

        asyncio.run(go())

    def close(self) -> None:
        async def go() -> None:
            try:
                await self.layer.group_discard(self.group, self.channel)
            finally:
                await self.layer.close_pools()

        try:
            asyncio.run(go())
        except Exception:
            logger.debug("could not leave %s", self.group, exc_info=True)


def split_text(text: str, limit: int) -> list[str]:
    """Cut a long answer into messages of at most `limit` characters: at the last paragraph break that fits,
    else a line break, else a sentence's end, else a space, and only as a last resort mid-word. Nothing is lost
    and nothing is added; the pieces joined by their breaks are the answer."""
    limit = max(int(limit), 20)
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit + 1]
        cut = -1
        for sep in ("\n\n", "\n"):
            at = window.rfind(sep)
            if at > limit // 4:
                cut = at
                break
        if cut < 0:
            ends = [window.rfind(mark) for mark in (". ", "! ", "? ", "。", "; ")]
            at = max(ends)
            if at > limit // 4:
                cut = at + 1
        if cut < 0:
            at = window.rfind(" ")
            cut = at if at > limit // 4 else limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].strip()
    if rest or not pieces:
        pieces.append(rest)
    return pieces


class LiveReply:
    """The message a person sees being written. An answer longer than the platform's limit becomes several
    messages, split at paragraph or sentence boundaries (`split_text`): the earlier ones are kept as they are
    and the live edit carries on in the last."""

    def __init__(self, client: PlatformClient, chat_id: str, reply_to: str, *, interval: float = EDIT_INTERVAL_SECONDS):
        self.client = client
        self.chat_id = chat_id
        self.reply_to = reply_to
        self.interval = interval
        self.limit = int(getattr(client, "max_text", 4000) or 4000)
        self.refs: list[str] = []  # the messages of this reply, in order
        self.shown_parts: list[str] = []
        self.text = ""
        self.activity = ""
        self.shown = ""
        self.last_edit = 0.0
        self.edits = 0

    @property
    def ref(self) -> str:
        """The message the live edit is on: the last one."""
        return self.refs[-1] if self.refs else ""

    def start(self) -> None:
        if not self.client.can_edit:
            return
        try:
            self.refs = [self.client.post(self.chat_id, PLACEHOLDER, reply_to=self.reply_to)]
            self.shown_parts = [PLACEHOLDER]
            self.last_edit = time.monotonic()
        except PlatformError as exc:
            logger.warning("bot %s: no placeholder (%s); the answer will be posted at the end", self.client.bot.pk, exc)

    def render(self) -> str:
        body = self.text.strip()
        if self.activity:
            return f"{body}\n\n_{self.activity}_" if body else f"_{self.activity}_"
        return body or PLACEHOLDER

    def due(self) -> bool:
        return bool(self.ref) and self.render() != self.shown and time.monotonic() - self.last_edit >= self.interval

    def _show(self, text: str) -> None:
        """Make the reply's messages read `text`: edit those that changed, post the ones it grew into."""
        parts = split_text(text, self.limit)
        for index, part in enumerate(parts):
            if index < len(self.refs):
                if self.shown_parts[index] != part:
                    self.client.edit(self.chat_id, self.refs[index], part)
                    self.shown_parts[index] = part
                    self.edits += 1
            else:
                self.refs.append(self.client.post(self.chat_id, part, reply_to=self.reply_to))
                self.shown_parts.append(part)
        # A reply never shrinks in messages; a part that is no longer needed is emptied to its placeholder.
        for index in range(len(parts), len(self.refs)):
            if self.shown_parts[index] != PLACEHOLDER:
                self.client.edit(self.chat_id, self.refs[index], PLACEHOLDER)
                self.shown_parts[index] = PLACEHOLDER
        self.shown = text

    def aside(self, text: str) -> None:
        """A message of its own in the reply's thread, beside the one being written (a browse's live view)."""
        try:
            self.client.post(self.chat_id, text, reply_to=self.reply_to)
        except PlatformError as exc:
            logger.info("bot %s: a note in the thread failed (%s)", self.client.bot.pk, exc)

    def flush(self) -> None:
        try:
            self._show(self.render())
        except PlatformError as exc:
            logger.info("bot %s: a live edit failed (%s)", self.client.bot.pk, exc)
        self.last_edit = time.monotonic()

    def finish(self, text: str) -> None:
        """The final answer: edits the reply's messages where they exist, posts otherwise."""
        text = text.strip() or "(no answer)"
        if self.refs:
            try:
                self._show(text)
                return
            except PlatformError as exc:
                logger.warning("bot %s: final edit failed (%s); posting instead", self.client.bot.pk, exc)
                done = len(self.refs) - 1  # what was shown before the failing message stays
                parts = split_text(text, self.limit)
                for part in parts[done:] if done < len(parts) else parts[-1:]:
                    self.client.post(self.chat_id, part, reply_to=self.reply_to)
                return
        for part in split_text(text, self.limit):
            self.refs.append(self.client.post(self.chat_id, part, reply_to=self.reply_to))


@metrics.counting_deliveries
def follow(subscription: Subscription, live: LiveReply, run_id: str, *, silence_limit: float | None = None,
           on_frame: Callable[[dict], None] | None = None, check_first: bool = False) -> Outcome:
    """Read the run's frames until its one `complete` or `error`, editing `live` along the way.

    `check_first`: ask the run's row once before waiting — a follower that subscribed after the run may have
    missed all of it (a resumed run's follower is started beside the run, not before it)."""
    limit = silence_limit or float(
        getattr(settings, "CHANNELBOTS_SILENCE_SECONDS", 0) or settings.RUN_STALE_AFTER.total_seconds())
    # The wait lasts as long as the run: give this thread's database connection back meanwhile (to the
    # pool, which a worker full of waiting replies would otherwise drain).
    connection.close()
    return asyncio.run(_follow(subscription, live, run_id, limit, on_frame, check_first))


async def follow_async(subscription: Subscription, live: LiveReply, run_id: str, *, check_first: bool = False,
                       on_frame: Callable[[dict], None] | None = None) -> Outcome:
    """`follow` as a task of the follows loop (channelbots/follows.py): the same reading and live edits, with
    the platform calls on the loop's pool threads (its default executor), counted like `follow`."""
    limit = float(getattr(settings, "CHANNELBOTS_SILENCE_SECONDS", 0) or settings.RUN_STALE_AFTER.total_seconds())
    outcome = await _follow(subscription, live, run_id, limit, on_frame, check_first)
    metrics.channel_delivery(getattr(getattr(live.client, "bot", None), "platform", ""), outcome.kind)
    return outcome


def _ending_frames(run_id: str) -> list[dict] | None:
    from agents.runner.frames import ending_frames

    try:
        return ending_frames(run_id)
    finally:
        connection.close()


async def stop_reader(task: asyncio.Task, run_id: str, *, interval: float = 0.25) -> None:
    """Cancel the frame reader and wait until it has really stopped.

    One cancel is not always enough. redis-py sends every command through `asyncio.wait_for` (a socket
    timeout is always set), and on Python 3.11 `wait_for` returns the inner result and drops a cancellation
    that lands in the step where the write completes. A reader cancelled just as it sent its next
    BZPOPMIN then carries on: channels-redis pops again every 5 s until a message comes, none does, and a
    plain `await task` kept the reply waiting for good after its run had ended (the storm lost ~3% of its
    answers this way). So cancel again until the reader ends: a repeated cancel reaches it inside the
    blocking read, where it is honoured.
    """
    cancels = 0
    while not task.done():
        task.cancel()
        cancels += 1
        await asyncio.wait({task}, timeout=interval)
    if cancels > 1:
        logger.info("frame reader of %s needed %d cancels to stop", run_id, cancels)
    if not task.cancelled() and task.exception() is not None:
        logger.debug("frame reader of %s ended with %r", run_id, task.exception())


async def _follow(subscription: Subscription, live: LiveReply, run_id: str, limit: float,
                  on_frame: Callable[[dict], None] | None, check_first: bool = False) -> Outcome:
    layer = subscription.layer
    queue: asyncio.Queue[dict] = asyncio.Queue()

    async def reader() -> None:
        while True:
            message = await layer.receive(subscription.channel)
            for item in frames_in(message):
                await queue.put(item)

    task = asyncio.create_task(reader())
    last_frame = last_asked = time.monotonic()
    if check_first:
        for ending in await asyncio.to_thread(_ending_frames, run_id) or []:
            queue.put_nowait(ending)
    watchdog = float(settings.CHANNELBOTS_WATCHDOG_SECONDS)
    final_output: str | None = None
    noted: set[str] = set()  # what the thread was already told of a browse
    # One pending get() kept across ticks: cancelling a get() on timeout (asyncio.wait_for on 3.11) can
    # drop a frame that had already been taken off the queue.
    getter: asyncio.Future | None = None
    try:
        while True:
            if getter is None:
                getter = asyncio.ensure_future(queue.get())
            done, _pending = await asyncio.wait({getter}, timeout=0.25)
            frame = None
            if getter in done:
                frame = getter.result()
                getter = None
            if frame is None:
                quiet = time.monotonic() - last_frame
                if quiet > limit:
                    return Outcome("lost", run_id, text=live.text)
                if quiet > watchdog and time.monotonic() - last_asked > watchdog:
                    # The channel layer drops without a word: when frames stop, ask the run itself; its
                    # ending comes through the same path as a live one.
                    last_asked = time.monotonic()
                    for ending in await asyncio.to_thread(_ending_frames, run_id) or []:
                        queue.put_nowait(ending)
            else:
                last_frame = time.monotonic()
                if on_frame is not None:
                    on_frame(frame)
                kind, data = frame.get("type"), frame.get("data") or {}
                logger.debug("run %s frame %s", run_id, kind)
                if kind == "text_delta":
                    live.text += str(data.get("content") or "")
                    live.activity = ""
                elif kind == "tool_call":
                    live.activity = activity_for(str(data.get("tool_name") or "a tool"))
                elif kind == "tool_result":
                    live.activity = ""
                elif kind == "resumed":
                    # A lost worker's run goes on elsewhere from its last checkpoint (agents/runner/recovery.py):
                    # the reply reads as that step left it, and what streamed after it is streamed again. The same
                    # messages are edited back (`LiveReply._show`): nothing is posted twice in the thread.
                    live.text = "".join(str(p.get("text") or "") for p in data.get("parts") or []
                                        if p.get("type") == "text")
                    live.activity = ""
                    final_output = None
                elif kind in ("browser_live", "browser_needs_person"):
                    note = browse_note(kind, data)
                    if note is not None and note not in noted:
                        noted.add(note)
                        await asyncio.to_thread(live.aside, note)
                elif kind == "final_result":
                    final_output = str(data.get("output") or "")
                elif kind == "complete":
                    status = str(data.get("status") or "completed")
                    text = final_output if final_output else live.text
                    if status == "completed":
                        return Outcome("completed", run_id, text=text, status=status, usage=data.get("usage") or {})
                    return Outcome("awaiting", run_id, text=text, status=status, usage=data.get("usage") or {})
                elif kind == "error":
                    status = str(data.get("status") or "failed")
                    return Outcome("cancelled" if status == "cancelled" else "failed", run_id, text=live.text,
                                   status=status, message=str(data.get("message") or ""))
            if live.due():
                await asyncio.to_thread(live.flush)
    finally:
        if getter is not None:
            getter.cancel()
        await stop_reader(task, run_id)
        try:
            await layer.group_discard(subscription.group, subscription.channel)
        except Exception:
            logger.debug("could not leave %s", subscription.group, exc_info=True)
        await layer.close_pools()
