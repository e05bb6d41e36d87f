"""Frames: `{type, data}` messages a run emits, and the sinks that carry them.

The runner publishes every frame to the channel-layer group `run-<id>`; consumers relay (and, for
public sockets, filter) them. A run ends with exactly one `complete` or `error` frame.
"""

from __future__ import annotations

from typing import Any, Protocol

from channels.layers import get_channel_layer

from agents.runs import group_name

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
}
MEMBER_ONLY_FRAME_TYPES = {
    "user_prompt_processed",
    "tool_approval_required",
    "ask_user",
    "message_saved",
    "conversation_created",
    "run_started",
}


def frame(type_: str, **data: Any) -> dict[str, Any]:
    return {"type": type_, "data": data}


class Sink(Protocol):
    async def send(self, frame: dict[str, Any]) -> None: ...


class ChannelLayerSink:
    """Publishes to the run's group. Frames are small; a lost socket does not stop the run."""

    def __init__(self, run_id: Any):
        self.group = group_name(run_id)
        self.layer = get_channel_layer()

    async def send(self, frame: dict[str, Any]) -> None:
        if self.layer is not None:
            await self.layer.group_send(self.group, {"type": "run.frame", "frame": frame})


class CollectingSink:
    """Keeps frames in memory (tests, benchmarks) and optionally forwards them."""

    def __init__(self, forward: Sink | None = None):
        self.frames: list[dict[str, Any]] = []
        self.forward = forward

    async def send(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        if self.forward is not None:
            await self.forward.send(frame)
