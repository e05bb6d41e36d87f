"""The channel layer: channels-redis, with fewer Redis round trips per message on both ends.

Every batch of a run's frames is a `group_send` to the run's group (agents/runner/frames.py), tens per run, and
every one of them is received by the web process that holds the run's socket. channels-redis 4.3 spends four round
trips on each `group_send` (drop the group's expired members, read the members, a pipeline dropping each member
channel's expired messages, then an `EVAL` that sends the whole Lua script's text every time) and four on each
message received (an `EVAL` of its backup-restoring script, text and all, a `BZPOPMIN` for one message, a `ZADD`
of it to the in-flight backup, a `ZPOPMIN` to take it out again), and hands a process's messages to its sockets
through one lock that every waiting socket contends for (two new tasks per socket per message). Here:

- `group_send` is one round trip: a script, called by its SHA (`EVALSHA`), that reads the group's members and
  sends to them, given the members this process saw last time for that group; when the group changed it sends
  nothing and returns the members, and the message goes again for them (a second trip, once per change). A group
  nobody listens to (a REST run started with `?wait=false`) costs that one trip too.
- a process's inbox (every process-local channel of this layer shares one key) is read by one task, the pump,
  which puts each message in its channel's buffer: a message at a time while they come one by one (a `BZPOPMIN`
  pipelined with a `ZCARD`: one trip a message, blocking while the inbox is empty), and while they pile up up to
  `RECEIVE_BATCH` in one scripted `ZPOPMIN` (one trip a batch). A socket waiting for its next frame awaits its own
  buffer: no lock, no task per waiting socket per message.
- `group_add` sends its `ZADD` and `EXPIRE` in one pipeline.

What reaches Redis is otherwise the same: the same keys, the same serialized messages (channels-redis' own
`_map_channel_keys_to_connection`), the same capacity check and expiry, the same in-flight backup of what was
popped and not yet handed over. With more than one Redis host (sharding: a group's key and its members' inboxes
may live on different servers, and one script cannot reach both) `group_send` is channels-redis' own, in its four
trips' order but two trips (`_group_send_sharded`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import Any

from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer

logger = logging.getLogger(__name__)

# KEYS: the member channels' keys on one connection. ARGV: a message per key, a capacity per key, now, expiry.
# channels-redis' script, with the expired messages dropped first (its separate pipeline before the EVAL).
GROUP_SEND_LUA = """
local over_capacity = 0
local current_time = ARGV[#ARGV - 1]
local expiry = ARGV[#ARGV]
local oldest = math.floor(tonumber(current_time)) - math.floor(tonumber(expiry))
for i=1,#KEYS do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, oldest)
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + #KEYS]) then
        redis.call('ZADD', KEYS[i], current_time, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over_capacity = over_capacity + 1
    end
end
return over_capacity
"""

# One round trip for a group on one Redis host. KEYS: the group, then the member channels' keys the caller built
# messages for. ARGV: how many members the caller expects, their names (in the group's order), a message per key,
# a capacity per key, now, the messages' expiry, the group members' cut-off (older members have expired).
# Returns {listeners, over capacity} when the group is what the caller expected, else {-1, members}: nothing sent.
GROUP_SEND_ONE_TRIP_LUA = """
local expected = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, ARGV[#ARGV])
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
if #members ~= expected then
    return {-1, members}
end
for i = 1, expected do
    if members[i] ~= ARGV[1 + i] then
        return {-1, members}
    end
end
local keys = #KEYS - 1
local base = 1 + expected
local current_time = ARGV[#ARGV - 2]
local expiry = ARGV[#ARGV - 1]
local oldest = math.floor(tonumber(current_time)) - math.floor(tonumber(expiry))
local over_capacity = 0
for i = 1, keys do
    local key = KEYS[i + 1]
    redis.call('ZREMRANGEBYSCORE', key, 0, oldest)
    if redis.call('ZCOUNT', key, '-inf', '+inf') < tonumber(ARGV[base + keys + i]) then
        redis.call('ZADD', key, current_time, ARGV[base + i])
        redis.call('EXPIRE', key, expiry)
    else
        over_capacity = over_capacity + 1
    end
end
return {expected, over_capacity}
"""

# The pump's batch read of its inbox. KEYS: the inbox, its in-flight backup. ARGV: at most how many messages to take,
# whether the last batch was handed over ('1': its backup is dropped) or not ('0': it goes back to the front of the
# inbox, as channels-redis' own restore does), the backup's expiry. Returns {how many are left in the inbox,
# ZPOPMIN's [message, score, …]}, each message kept in the backup until a later call says it was handed over.
RECEIVE_LUA = """
if ARGV[2] == '1' then
    redis.call('DEL', KEYS[2])
else
    local backed_up = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
    for i = #backed_up, 1, -2 do
        redis.call('ZADD', KEYS[1], backed_up[i], backed_up[i - 1])
    end
    redis.call('DEL', KEYS[2])
end
local popped = redis.call('ZPOPMIN', KEYS[1], ARGV[1])
for i = 1, #popped, 2 do
    redis.call('ZADD', KEYS[2], popped[i + 1], popped[i])
end
if #popped > 0 then
    redis.call('EXPIRE', KEYS[2], ARGV[3])
end
return {redis.call('ZCARD', KEYS[1]), popped}
"""

# Messages the pump takes in one trip. A batch is handed over without an await, so a large one only delays the
# loop by its deserialization (~10 µs a message).
RECEIVE_BATCH = 200
# Groups whose members a process remembers for the one-trip group_send (a runs worker sends to one group per run
# in flight); the least recently used is forgotten first, and a forgotten group costs one more trip, nothing else.
MEMBER_CACHE_SIZE = 4096


class RedisChannelLayer(ChannelsRedisLayer):
    """channels-redis' layer with fewer round trips per message (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scripts: dict[tuple[str, int], Any] = {}
        self._members: collections.OrderedDict[bytes, list[bytes]] = collections.OrderedDict()
        self._pump: asyncio.Task | None = None
        self._waiting: collections.Counter[str] = collections.Counter()
        # Whether the inbox's last batch reached its buffers. False while a read is under way: a read cut short
        # (the pump cancelled while its script ran) may have popped a batch into the backup that no buffer got, and
        # the next read puts the backup back first — a batch twice rather than none, as channels-redis chooses.
        self._handed_over = False

    def _script(self, name: str, text: str, index: int) -> Any:
        script = self._scripts.get((name, index))
        if script is None:
            script = self._scripts[(name, index)] = self.connection(index).register_script(text)
        return script

    # ------------------------------------------------------------------ sending

    async def group_add(self, group: str, channel: str) -> None:
        """channels-redis' group_add, its two commands in one pipeline."""
        assert self.require_valid_group_name(group), "Group name not valid"
        assert self.require_valid_channel_name(channel), "Channel name not valid"
        key = self._group_key(group)
        pipe = self.connection(self.consistent_hash(group)).pipeline(transaction=False)
        pipe.zadd(key, {channel: time.time()})
        pipe.expire(key, self.group_expiry)
        await pipe.execute()

    async def group_send(self, group: str, message: dict) -> int:  # type: ignore[override]
        """channels' group_send; returns how many channels were in the group (0: nobody listened), which the
        runner's frame sink reads to widen its window while nobody listens."""
        assert self.require_valid_group_name(group), "Group name not valid"
        if self.ring_size != 1:
            return await self._group_send_sharded(group, message)
        key = self._group_key(group)
        script = self._script("group_send", GROUP_SEND_ONE_TRIP_LUA, 0)
        members = self._members.get(key, [])
        for _ in range(3):  # a group that changes between two trips is read again; three changes in a row: give up
            channel_keys, args = self._group_send_args(members, message)
            result = await script(keys=[key, *channel_keys],
                                  args=[len(members), *members, *args, time.time(), self.expiry,
                                        int(time.time()) - self.group_expiry],
                                  client=self.connection(0))
            if result[0] != -1:
                self._remember(key, members)
                if result[1] > 0:
                    logger.info("%s of %s channels over capacity in group %s", result[1], len(members), group)
                return len(members)
            members = list(result[1])
        self._remember(key, members)
        logger.warning("group %s changed three times while sending to it; message dropped", group)
        return len(members)

    def _group_send_args(self, members: list[bytes], message: dict) -> tuple[list[str], list[Any]]:
        """The member channels' keys and, for ARGV, a message then a capacity per key (channels-redis' own
        mapping of channels to keys and messages)."""
        if not members:
            return [], []
        _, to_message, to_capacity = self._map_channel_keys_to_connection(
            [member.decode("utf8") for member in members], message)
        keys = list(to_message)
        return keys, [to_message[k] for k in keys] + [to_capacity[k] for k in keys]

    def _remember(self, key: bytes, members: list[bytes]) -> None:
        self._members[key] = members
        self._members.move_to_end(key)
        while len(self._members) > MEMBER_CACHE_SIZE:
            self._members.popitem(last=False)

    async def _group_send_sharded(self, group: str, message: dict) -> int:
        key = self._group_key(group)
        connection = self.connection(self.consistent_hash(group))
        pipe = connection.pipeline(transaction=False)
        pipe.zremrangebyscore(key, min=0, max=int(time.time()) - self.group_expiry)
        pipe.zrange(key, 0, -1)
        _, members = await pipe.execute()
        if not members:
            return 0
        channel_names = [member.decode("utf8") for member in members]
        to_connection, to_message, to_capacity = self._map_channel_keys_to_connection(channel_names, message)
        for index, channel_keys in to_connection.items():
            args = [to_message[k] for k in channel_keys] + [to_capacity[k] for k in channel_keys]
            over = await self._script("group_send_sharded", GROUP_SEND_LUA, index)(
                keys=channel_keys, args=[*args, time.time(), self.expiry], client=self.connection(index))
            if over > 0:
                logger.info("%s of %s channels over capacity in group %s", over, len(channel_names), group)
        return len(channel_names)

    # ------------------------------------------------------------------ receiving

    async def receive(self, channel: str) -> dict:
        """A process-local channel's next message, from its buffer, which the process's pump fills; any other
        channel is channels-redis' own receive."""
        if "!" not in channel:
            return await super().receive(channel)
        assert self.require_valid_channel_name(channel)
        real_channel = self.non_local_name(channel)
        assert real_channel.endswith(self.client_prefix + "!"), "Wrong client prefix"
        loop = asyncio.get_running_loop()
        pump = self._pump
        if pump is None or pump.done() or pump.get_loop() is not loop:
            # A pump of another loop (a test's asyncio.run before this one) sees it is no longer the pump and stops.
            self._pump = loop.create_task(self._pump_inbox(real_channel))
        buffer = self.receive_buffer[channel]
        self._waiting[channel] += 1
        try:
            message = await buffer.get()
        finally:
            self._waiting[channel] -= 1
            if not self._waiting[channel]:
                del self._waiting[channel]
                # Nothing waits on it and nothing is in it: dropped, as channels-redis drops an empty buffer.
                if buffer.empty() and self.receive_buffer.get(channel) is buffer:
                    del self.receive_buffer[channel]
        if isinstance(message, BaseException):
            raise message
        return message

    async def _pump_inbox(self, real_channel: str) -> None:
        """Hand this process's inbox over to its channels' buffers while anyone waits on one of them."""
        me = asyncio.current_task()
        index = self.consistent_hash(real_channel)
        key = self.prefix + real_channel
        backup = self._backup_channel_name(key)
        script = self._script("receive", RECEIVE_LUA, index)
        backlog = True  # the first read is the batch one: it also puts back what an earlier pump left in the backup
        try:
            while self._pump is me and self._waiting:
                if backlog or not self._handed_over:
                    handed_over, self._handed_over = self._handed_over, False
                    left, popped = await script(keys=[key, backup],
                                                args=[RECEIVE_BATCH, "1" if handed_over else "0", self.expiry],
                                                client=self.connection(index))
                    contents = popped[0::2]
                else:
                    # Nothing was left at the last read: block for the next message, and learn in the same trip
                    # whether more are behind it (then the next read is the batch one). Not backed up: it is handed
                    # over with no await between its arrival and its buffer (channels-redis' backup of a BZPOPMIN
                    # comes a trip later, and covers only that trip).
                    pipe = self.connection(index).pipeline(transaction=False)
                    pipe.bzpopmin(key, timeout=self.brpop_timeout)
                    pipe.zcard(key)
                    result, left = await pipe.execute()
                    contents = [result[1]] if result else []
                backlog = left > 0
                for content in contents:
                    self._hand_over(content)
                self._handed_over = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # Redis lost: every waiting socket gets the error, as channels-redis' receive raises
            logger.warning("channel layer receive failed", exc_info=True)
            for channel in list(self._waiting):
                self.receive_buffer[channel].put_nowait(exc)
        finally:
            if self._pump is me:
                self._pump = None

    def _hand_over(self, content: bytes) -> None:
        try:
            message = self.deserialize(content)
        except Exception:  # noqa: BLE001 - one unreadable message must not stop every socket of the process
            logger.warning("channel layer: an unreadable message was dropped", exc_info=True)
            return
        channels = message.pop("__asgi_channel__", None)
        for channel in channels if isinstance(channels, list) else [channels]:
            if channel is not None:
                self.receive_buffer[channel].put_nowait(message)

    async def close_pools(self) -> None:
        pump, self._pump = self._pump, None
        if pump is not None and not pump.done() and pump.get_loop() is asyncio.get_running_loop():
            pump.cancel()
            # It is being closed: how its last read ended no longer matters.
            await asyncio.gather(pump, return_exceptions=True)
        await super().close_pools()
