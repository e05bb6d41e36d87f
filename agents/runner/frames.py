"""Frames: `{type, data}` messages a run emits, and the sinks that carry them.

The runner publishes every frame to the channel-layer group `run-<id>`; consumers relay (and, for
public sockets, filter) them. A run ends with exactly one `complete` or `error` frame.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from channels.layers import get_channel_layer
from django.conf import settings

from agents.run_handle import frame, group_name

logger = logging.getLogger(__name__)

PUBLIC_FRAME_TYPES = {
    "ready",
    "history",
    "model_request_start",
    "part_start",
    "text_delta",
    "thinking_delta",
    "call_tools_start",
    "tool_call",
    "tool_call_delta",
    "tool_result",
    "final_result_start",
    "final_result",
    "complete",
    "error",
    # A lost worker's run goes on elsewhere: redraw the turn from `parts` (agents/runner/recovery.py).
    "resumed",
}
MEMBER_ONLY_FRAME_TYPES = {
    "user_prompt_processed",
    "tool_approval_required",
    "ask_user",
    "message_saved",
    "conversation_created",
    "conversation_titled",
    "run_started",
    "capability_missing",
    "browser_live",
}


class Sink(Protocol):
    """Where a run's frames go. A sink with an `async close()` is closed when the run is over."""

    async def send(self, frame: dict[str, Any]) -> None: ...


class ChannelLayerSink:
    """Publishes to the run's group, in order, a few messages per turn rather than one per word.

    Every channel-layer message costs a few Redis round trips on the way out and one receive on the
    way in; a message per word made delivery, not the model, most of a turn's CPU. Frames queue here and
    one background flusher sends what piled up during a short window (`RUN_FRAME_FLUSH_SECONDS`,
    20 ms by default: faster than anyone reads) as a single `run.frames` message, or `run.frame` for a
    lone frame. A run's last frame (`complete`/`error`) cuts the window short and is awaited, so an
    ending is never held back. Consecutive deltas of one part within a window travel as one delta
    (`coalesce`): a client sees the text arrive a window at a time instead of a word at a time, and
    every socket relays a few frames per window instead of one per token. Each message names its run:
    leaving a group does not take back what already sits in a consumer's inbox, so a consumer must not
    take a late frame of a finished turn for one of the next.
    """

    def __init__(self, run_id: Any):
        self.run_id = str(run_id)
        self.group = group_name(run_id)
        self.layer = get_channel_layer()
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._flusher: asyncio.Task | None = None
        self._ending = False
        # What the flusher awaits while a window is open: resolved by the window's timer or by the run's last frame.
        # (One future and one timer per window; asyncio.wait_for on an Event made a task and a waiter more, per batch.)
        self._window_open: asyncio.Future | None = None
        self.window: float = settings.RUN_FRAME_FLUSH_SECONDS
        # While nobody listens (a REST run started with `?wait=false`: nobody joined its group) the window
        # widens to RUN_FRAME_IDLE_FLUSH_SECONDS: every batch was a Redis round trip that reached no one, at a
        # model's pace one per token. Nothing is dropped or reordered: a listener who joins meanwhile gets the
        # next batch at most that much later, and the windows after it are the short one again. A layer whose
        # group_send does not say how many listened (channels' API returns None) keeps the short window.
        self.idle_window: float = settings.RUN_FRAME_IDLE_FLUSH_SECONDS
        self._listened = True

    async def send(self, frame: dict[str, Any]) -> None:
        if self.layer is None:
            return
        self._queue.put_nowait(frame)
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_forever())
        if frame["type"] in FINAL_FRAME_TYPES:
            self._ending = True
            _close_window(self._window_open)
            await self.drain()

    async def _flush_forever(self) -> None:
        while True:
            batch = [await self._queue.get()]
            window = self.window if self._listened else max(self.window, self.idle_window)
            if window > 0 and not self._ending:
                loop = asyncio.get_running_loop()
                self._window_open = loop.create_future()
                timer = loop.call_later(window, _close_window, self._window_open)
                try:
                    await self._window_open  # the window closed (or the run ended): send what piled up
                finally:
                    timer.cancel()
                    self._window_open = None
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            frames = coalesce(batch)
            try:
                if len(frames) == 1:
                    listeners = await self.layer.group_send(self.group, {"type": "run.frame", "frame": frames[0],
                                                                         "run_id": self.run_id})
                else:
                    listeners = await self.layer.group_send(self.group, {"type": "run.frames", "frames": frames,
                                                                         "run_id": self.run_id})
                self._listened = listeners != 0
            except Exception:  # a lost channel layer must not lose the run (the transcript has it all)
                logger.warning("could not publish %d frame(s) to %s", len(batch), self.group, exc_info=True)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def drain(self) -> None:
        await self._queue.join()

    async def close(self) -> None:
        """The run is over: publish what is left and end the flusher (the loop outlives every run)."""
        if self._flusher is None:
            return
        await self.drain()
        self._flusher.cancel()
        self._flusher = None


FINAL_FRAME_TYPES = {"complete", "error"}


def _close_window(waiter: asyncio.Future | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)
# Delta frames whose text field concatenates: two in a row for the same part are one delta.
DELTA_TEXT_FIELD = {"text_delta": "content", "thinking_delta": "content", "tool_call_delta": "args_delta"}


def coalesce(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge runs of consecutive deltas of the same part (same type, same index, nothing else in between)
    into one frame, in order. The frames given are not modified (other sinks may hold them)."""
    merged: list[dict[str, Any]] = []
    for item in frames:
        field_name = DELTA_TEXT_FIELD.get(item.get("type", ""))
        data = item.get("data") or {}
        last = merged[-1] if merged else None
        if (field_name and last is not None and last["type"] == item["type"]
                and isinstance(data.get(field_name), str) and isinstance(last["data"].get(field_name), str)
                and last["data"].keys() == data.keys()
                and all(last["data"][k] == v for k, v in data.items() if k != field_name)):
            merged[-1] = {"type": item["type"], "data": {**last["data"], field_name: last["data"][field_name] + data[field_name]}}
        else:
            merged.append(item)
    return merged


def frames_in(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The frames a channel-layer message from `ChannelLayerSink` carries: one for `run.frame`, a batch
    for `run.frames`, none for anything else. A listener that read only `frame` would miss a run's last
    frame whenever it arrived in a batch."""
    if message.get("type") == "run.frame":
        return [message.get("frame") or {}]
    if message.get("type") == "run.frames":
        return list(message.get("frames") or [])
    return []

# How a run ended, in words anyone it answered may read (the row's `error` is the operator's and may name
# internal limits).
ENDED_MESSAGES: dict[str, tuple[str, str]] = {
    "budget_exceeded": ("This assistant has reached its spending limit for now.", "budget_exceeded"),
    "cancelled": ("This answer was stopped.", "cancelled"),
    "guardrail_blocked": ("This message could not be answered.", "refused"),
    "failed": ("Something went wrong while answering. Please try again.", "run_failed"),
}


def context_usage(run: Mapping[str, Any]) -> dict[str, int]:
    """A finished run's context fill for its usage line: the input tokens of its last model request and the window
    they are measured by — nothing when it made no request, only the tokens when no window is known."""
    if run.get("context_tokens") is None:
        return {}
    reading = {"context_tokens": run["context_tokens"]}
    if run.get("context_window"):
        reading["context_window"] = run["context_window"]
    return reading


def ending_frames(run_id: Any) -> list[dict[str, Any]] | None:
    """The frames that end a run, rebuilt from its row — for a listener whose frames the channel layer
    dropped (it drops without a word). None while the run is queued or running. Sync (ORM)."""
    from agents.models import Run, RunStatus

    run = (Run.objects.filter(pk=run_id)
           .values("status", "output", "input_tokens", "output_tokens", "requests", "cost_usd", "cost_is_partial",
                   "context_tokens", "context_window")
           .first())
    if run is None or run["status"] in (RunStatus.QUEUED, RunStatus.RUNNING):
        return None
    status = run["status"]
    if status in (RunStatus.COMPLETED, RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER):
        usage = {"input_tokens": run["input_tokens"], "output_tokens": run["output_tokens"],
                 "requests": run["requests"], "cost_usd": f"{run['cost_usd']:f}",
                 "cost_is_partial": run["cost_is_partial"], **context_usage(run)}
        # final_result is assigned, not appended: it restores an answer whose deltas were lost.
        return [frame("final_result", output=run["output"] or ""), frame("complete", status=status, usage=usage)]
    message, code = ENDED_MESSAGES.get(status, ENDED_MESSAGES["failed"])
    return [frame("error", message=message, code=code, status=status)]


class CollectingSink:
    """Keeps frames in memory (tests, benchmarks) and optionally forwards them."""

    def __init__(self, forward: Sink | None = None):
        self.frames: list[dict[str, Any]] = []
        self.forward = forward

    async def send(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        if self.forward is not None:
            await self.forward.send(frame)

    async def close(self) -> None:
        close = getattr(self.forward, "close", None)
        if close is not None:
            await close()
