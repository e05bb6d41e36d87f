"""agenticos.channel_layer: `group_send` in one round trip and a process's inbox read in batches deliver exactly
what channels-redis' own do — to every member (process-local channels sharing one inbox among them), nothing to a
channel that left, the capacity still enforced, expired messages still dropped, every channel's messages in order,
a batch cut short put back — and a group nobody listens to costs one trip."""

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


async def _closed(*layers: RedisChannelLayer, counting: pytest.MonkeyPatch | None = None) -> None:
    """A scenario's end: the round-trip counting undone first (closing is not counted), every layer's pools closed."""
    if counting is not None:
        counting.undo()
    for layer in layers:
        await layer.close_pools()


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


def _counting(monkeypatch, layer) -> list:
    """The commands a layer sends from now on (a pipeline counted once, as the one trip it is)."""
    calls: list = []
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
    return calls


def _trips(calls: list) -> list:
    # redis-py loads a script the server does not know yet (SCRIPT LOAD after NOSCRIPT): once per server, not a trip
    # of the message.
    return [c for c in calls if c not in ("SCRIPT LOAD", "SCRIPT")]


def test_a_group_without_members_costs_one_round_trip(monkeypatch):
    async def scenario():
        layer = _layer()
        calls = _counting(monkeypatch, layer)
        try:
            assert await layer.group_send(f"g{uuid.uuid4().hex}", {"type": "m"}) == 0  # nobody listened
        finally:
            monkeypatch.undo()
            await layer.close_pools()
        return calls

    calls = asyncio.run(scenario())
    assert _trips(calls) == ["EVALSHA"], calls  # one script: members read, nobody to send to


def test_a_group_seen_before_costs_one_round_trip_and_a_change_is_followed(monkeypatch):
    async def scenario():
        sender, listener = _layer(), _layer()
        group = f"g{uuid.uuid4().hex}"
        try:
            first, second = await listener.new_channel(), await listener.new_channel()
            await listener.group_add(group, first)
            assert await sender.group_send(group, {"type": "m", "n": 1}) == 1  # members learnt: two trips
            calls = _counting(monkeypatch, sender)
            assert await sender.group_send(group, {"type": "m", "n": 2}) == 1
            monkeypatch.undo()
            one_trip = list(calls)
            # The group changes behind the sender's back: the one who left gets nothing, the newcomer gets it.
            await listener.group_discard(group, first)
            await listener.group_add(group, second)
            assert await sender.group_send(group, {"type": "m", "n": 3}) == 1
            got_first = [(await asyncio.wait_for(listener.receive(first), 2))["n"] for _ in range(2)]
            got_second = (await asyncio.wait_for(listener.receive(second), 2))["n"]
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(listener.receive(first), 0.3)
            return one_trip, got_first, got_second
        finally:
            await _closed(sender, listener, counting=monkeypatch)

    one_trip, got_first, got_second = asyncio.run(scenario())
    assert _trips(one_trip) == ["EVALSHA"], one_trip
    assert got_first == [1, 2]
    assert got_second == 3


def test_a_process_inbox_is_read_in_batches_and_every_channel_gets_its_own_in_order(monkeypatch):
    async def scenario():
        sender, listener = _layer(), _layer()
        channels = [await listener.new_channel() for _ in range(20)]
        groups = [f"g{uuid.uuid4().hex}" for _ in channels]
        try:
            for group, channel in zip(groups, channels, strict=True):
                await listener.group_add(group, channel)
            for n in range(10):
                for group in groups:
                    await sender.group_send(group, {"type": "m", "n": n, "group": group})
            calls = _counting(monkeypatch, listener)
            got = await asyncio.gather(*(
                asyncio.wait_for(_receive_many(listener, channel, 10), 5) for channel in channels))
            monkeypatch.undo()
            return got, calls
        finally:
            await _closed(sender, listener, counting=monkeypatch)

    got, calls = asyncio.run(scenario())
    assert all([m["n"] for m in messages] == list(range(10)) for messages in got)
    assert all(len({m["group"] for m in messages}) == 1 for messages in got)
    # 200 messages waiting in one inbox: one scripted read takes them all (channels-redis: four trips a message).
    assert len(_trips(calls)) <= 3, calls


async def _receive_many(layer, channel, count):
    return [await layer.receive(channel) for _ in range(count)]


def test_a_batch_the_pump_did_not_hand_over_goes_back_to_the_inbox():
    async def scenario():
        sender, listener = _layer(), _layer()
        group = f"g{uuid.uuid4().hex}"
        try:
            channel = await listener.new_channel()
            await listener.group_add(group, channel)
            for n in range(3):
                await sender.group_send(group, {"type": "m", "n": n})
            # What a read cut short leaves: the batch popped into the in-flight backup, no buffer given it.
            key = listener.prefix + listener.non_local_name(channel)
            connection = listener.connection(0)
            popped = await connection.zpopmin(key, 3)
            await connection.zadd(listener._backup_channel_name(key), dict(popped))
            listener._handed_over = False
            return [(await asyncio.wait_for(listener.receive(channel), 2))["n"] for _ in range(3)]
        finally:
            await _closed(sender, listener)

    assert asyncio.run(scenario()) == [0, 1, 2]


def test_a_cancelled_receive_leaves_nothing_behind_and_the_next_one_still_gets_its_message():
    async def scenario():
        sender, listener = _layer(), _layer()
        group = f"g{uuid.uuid4().hex}"
        try:
            channel = await listener.new_channel()
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(listener.receive(channel), 0.2)
            assert channel not in listener.receive_buffer and not listener._waiting
            await listener.group_add(group, channel)
            await sender.group_send(group, {"type": "m", "n": "after"})
            return (await asyncio.wait_for(listener.receive(channel), 7))["n"]  # the pump may sit in a 5 s BZPOPMIN
        finally:
            await _closed(sender, listener)

    assert asyncio.run(scenario()) == "after"


def test_messages_that_come_one_by_one_cost_one_trip_each(monkeypatch):
    async def scenario():
        sender, listener = _layer(), _layer()
        group = f"g{uuid.uuid4().hex}"
        try:
            channel = await listener.new_channel()
            await listener.group_add(group, channel)
            await sender.group_send(group, {"type": "m", "n": -1})
            await asyncio.wait_for(listener.receive(channel), 2)  # the pump is running, the inbox empty
            calls = _counting(monkeypatch, listener)
            got = []
            for n in range(5):
                receiving = asyncio.ensure_future(listener.receive(channel))
                await sender.group_send(group, {"type": "m", "n": n})
                got.append((await asyncio.wait_for(receiving, 2))["n"])
            monkeypatch.undo()
            return got, calls
        finally:
            await _closed(sender, listener, counting=monkeypatch)

    got, calls = asyncio.run(scenario())
    assert got == [0, 1, 2, 3, 4]
    # (The counting is per client class: the sender's five group_sends are its one EVALSHA each.) The listener: a
    # blocking pop and the inbox's count in one pipeline per message (channels-redis: four trips a message); the
    # last one may already be waiting for a sixth.
    assert _trips(calls).count("EVALSHA") == 5, calls
    assert set(_trips(calls)) == {"EVALSHA", "PIPELINE"} and calls.count("PIPELINE") <= 6, calls
