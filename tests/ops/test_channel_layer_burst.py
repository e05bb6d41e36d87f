"""Many sockets joining their groups at the same moment (a page of widgets, a reconnect storm) all get in:
the channel layer's Redis pool is not the 100-connection default of redis-py 8, which raises instead of
waiting (it closed 161 of 300 bench sockets with 1011)."""

from __future__ import annotations

import asyncio
import uuid

from channels.layers import get_channel_layer

BURST = 300


def test_three_hundred_group_joins_at_once_all_succeed():
    async def burst() -> int:
        layer = get_channel_layer()
        group = f"burst-{uuid.uuid4().hex}"
        channels = [await layer.new_channel() for _ in range(BURST)]
        try:
            await asyncio.gather(*(layer.group_add(group, channel) for channel in channels))
            await layer.group_send(group, {"type": "ping"})
            received = await asyncio.gather(*(asyncio.wait_for(layer.receive(c), 10) for c in channels))
            return sum(1 for message in received if message["type"] == "ping")
        finally:
            await asyncio.gather(*(layer.group_discard(group, channel) for channel in channels))

    assert asyncio.run(burst()) == BURST
