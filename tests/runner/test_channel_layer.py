"""agenticos.channel_layer: `group_send` in fewer round trips delivers exactly what channels-redis' own does —
to every member (process-local channels sharing one inbox among them), nothing to a channel that left, the
capacity still enforced, expired messages still dropped — and a group nobody listens to costs one trip."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers
from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer

from agenticos.channel_layer import RedisChannelLayer


def _layer(**overrides) -> RedisChannelLayer:
    from django.conf import settings

    return RedisChannelLayer(**{**settings.CHANNEL_LAYERS["default"]["CONFIG"], **overrides})


def test_the_configured_layer_is_this_one():
    assert type(channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)) is RedisChannelLayer


def test_every_member_gets_the_message_and_one_that_left_does_not():
    async def scenario():
        sender, listener, other = _layer(), _layer(), _layer()
        group = f"g{uuid.uuid4().hex}"
        try:
            first, second = await listener.new_channel(), await listener.new_channel()  # one process inbox
            third, gone = await other.new_channel(), await other.new_channel()
            for channel in (first, second, third, gone):
                await listener.group_add(group, channel)
            await listener.group_discard(group, gone)
            # How many listened (the runner's frame sink reads it): the three left in the group.
            assert await sender.group_send(group, {"type": "run.frame", "frame": {"type": "text_delta"},
                                                   "run_id": "r"}) == 3
            got = [await asyncio.wait_for(layer.receive(channel), 2)
                   for layer, channel in ((listener, first), (listener, second), (other, third))]
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(other.receive(gone), 0.3)
            return got
        finally:
            for layer in (sender, listener, other):
                await layer.close_pools()

    got = asyncio.run(scenario())
    assert [m["frame"] for m in got] == [{"type": "text_delta"}] * 3
    assert all(m["type"] == "run.frame" and m["run_id"] == "r" for m in got)


def test_a_full_channel_drops_what_exceeds_its_capacity_as_channels_redis_does():
    async def scenario(layer_class):
        from django.conf import settings

        layer = layer_class(**{**settings.CHANNEL_LAYERS["default"]["CONFIG"], "capacity": 2})
        group = f"g{uuid.uuid4().hex}"
        try:
            channel = await layer.new_channel()
            await layer.group_add(group, channel)
            for i in range(4):
                await layer.group_send(group, {"type": "m", "n": i})
            got = [await asyncio.wait_for(layer.receive(channel), 2) for _ in range(2)]
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(layer.receive(channel), 0.3)
            return [m["n"] for m in got]
        finally:
            await layer.close_pools()

    # The same outcome as the library's own group_send (which this one replaces).
    assert asyncio.run(scenario(RedisChannelLayer)) == asyncio.run(scenario(ChannelsRedisLayer)) == [0, 1]


def test_expired_messages_are_dropped_before_the_capacity_is_counted():
    async def scenario():
        layer = _layer(capacity=1, expiry=1)
        group = f"g{uuid.uuid4().hex}"
        try:
            channel = await layer.new_channel()
            await layer.group_add(group, channel)
            await layer.group_send(group, {"type": "m", "n": "old"})
            await asyncio.sleep(2.2)  # past the expiry: the old message no longer fills the channel
            await layer.group_send(group, {"type": "m", "n": "new"})
            return (await asyncio.wait_for(layer.receive(channel), 2))["n"]
        finally:
            await layer.close_pools()

    assert asyncio.run(scenario()) == "new"


def test_a_group_without_members_costs_one_round_trip(monkeypatch):
    calls = []

    async def scenario():
        layer = _layer()
        connection = layer.connection(0)
        original = type(connection).execute_command

        async def counted(self, *args, **kwargs):
            calls.append(args[0])
            return await original(self, *args, **kwargs)

        monkeypatch.setattr(type(connection), "execute_command", counted)
        original_pipeline = type(connection).pipeline

        def counted_pipeline(self, *args, **kwargs):
            calls.append("PIPELINE")
            return original_pipeline(self, *args, **kwargs)

        monkeypatch.setattr(type(connection), "pipeline", counted_pipeline)
        try:
            assert await layer.group_send(f"g{uuid.uuid4().hex}", {"type": "m"}) == 0  # nobody listened
        finally:
            monkeypatch.undo()
            await layer.close_pools()

    asyncio.run(scenario())
    assert calls == ["PIPELINE"], calls  # the two commands went out together, nothing else
