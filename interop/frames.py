"""A run's frames as an async iterator, for a view that answers while the run streams.

The REST run endpoint's mechanism (agents/api_runs.py `_wait_for_end`): join the run's channel-layer group
before the run can start, read `frames_in` each message, stop at a final frame. Async here because the view
is (daphne runs it on its own loop), and the endpoint's helper only waits, it does not hand frames out."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from asgiref.sync import sync_to_async
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers

from agents.api_runs import WAIT_TIMEOUT_SECONDS
from agents.models import Run
from agents.run_handle import group_name
from agents.runner.frames import FINAL_FRAME_TYPES, ending_frames, frames_in

# The channel layer drops a message without a word when a listener falls behind; after this long without
# one, the run's row says whether it already ended (and how).
QUIET_SECONDS = 5.0


class RunFrames:
    def __init__(self, run_id: uuid.UUID) -> None:
        self.run_id = run_id
        # A layer of its own: closing its pools at the end must not close the process-wide layer's.
        self.layer: Any = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
        self.channel: str | None = None

    async def start(self, start: Callable[[], Run]) -> Run:
        """Join the group, then admit the run (any refusal closes the listener and propagates)."""
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(group_name(self.run_id), self.channel)
        try:
            return await sync_to_async(start)()
        except BaseException:
            await self.close()
            raise

    async def iterate(self) -> AsyncIterator[dict[str, Any]]:
        assert self.channel is not None, "start() first"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_TIMEOUT_SECONDS
        while (remaining := deadline - loop.time()) > 0:
            try:
                message = await asyncio.wait_for(self.layer.receive(self.channel), timeout=min(remaining, QUIET_SECONDS))
            except TimeoutError:
                ended = await sync_to_async(ending_frames)(self.run_id)
                if ended:
                    for item in ended:
                        yield item
                    return
                continue
            for item in frames_in(message):
                yield item
                if item.get("type") in FINAL_FRAME_TYPES:
                    return

    async def close(self) -> None:
        if self.channel is not None:
            await self.layer.group_discard(group_name(self.run_id), self.channel)
            self.channel = None
        await self.layer.close_pools()
