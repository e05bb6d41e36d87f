"""A channel reply ends when its run's `complete` frame arrives, even when its frame reader swallows the
first cancellation.

On Python 3.11 `asyncio.wait_for` returns the inner result and drops a cancellation that lands in the step
where the awaited thing completes; redis-py sends every command through it. Under the channel storm ~3% of
the readers were cancelled right as they sent their next BZPOPMIN, kept popping, and the reply waited on
them for good after its run had completed: the answer was never posted.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from types import SimpleNamespace

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from agents.run_handle import group_name
from agents.runner.frames import frame
from channelbots import delivery


def quiet_reply() -> delivery.LiveReply:
    client = SimpleNamespace(can_edit=False, bot=SimpleNamespace(pk="bot"))
    return delivery.LiveReply(client, "C1", "1.0")  # type: ignore[arg-type]


def test_the_real_wait_for_drops_a_cancel_and_the_reader_is_still_stopped():
    """The mechanism, with asyncio's own wait_for (as redis-py's send_packed_command calls it): the write
    completes and the cancel comes in the same step; stop_reader still ends the reader."""
    writes: list[asyncio.Future] = []
    popped: list[str] = []

    async def reader() -> None:
        loop = asyncio.get_running_loop()
        while True:
            write = loop.create_future()
            writes.append(write)
            await asyncio.wait_for(write, 30)  # the command is written...
            popped.append("pop")
            await asyncio.Event().wait()  # ...and the blocking pop waits for a message that never comes

    async def scenario() -> tuple[bool, int]:
        task = asyncio.create_task(reader())
        await asyncio.sleep(0)
        writes[0].set_result(None)
        task.cancel()  # same step as the write completing: wait_for returns and the cancel is gone
        await asyncio.sleep(0.05)
        swallowed = not task.done() and popped == ["pop"]
        stopper = asyncio.create_task(delivery.stop_reader(task, "r1", interval=0.05))
        await asyncio.wait({stopper}, timeout=10)
        return stopper.done() and task.done(), swallowed

    stopped, swallowed = asyncio.run(scenario())
    assert swallowed, "asyncio.wait_for no longer drops the cancel: stop_reader's retry may be unnecessary"
    assert stopped


class SwallowingLayer:
    """The reply's real Redis channel layer, except that the reader's pop after the run's frames drops the
    first cancellation the way redis-py's write does on Python 3.11 (see above) and goes on waiting."""

    def __init__(self, layer):
        self.layer = layer
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.layer, name)

    async def receive(self, channel):
        self.calls += 1
        if self.calls > 1:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                pass  # dropped, as asyncio.wait_for drops it when the write completes in the same step
        return await self.layer.receive(channel)


def test_a_reply_whose_reader_swallows_the_cancel_still_ends_with_its_answer(settings):
    settings.CHANNELBOTS_WATCHDOG_SECONDS = 60  # the answer comes from the frames, not from the row
    run_id = str(uuid.uuid4())
    subscription = delivery.Subscription(run_id)
    subscription.open()
    subscription.layer = SwallowingLayer(subscription.layer)
    outcome: list[delivery.Outcome] = []
    thread = threading.Thread(target=lambda: outcome.append(
        delivery.follow(subscription, quiet_reply(), run_id, silence_limit=60)), daemon=True)
    thread.start()
    usage = {"input_tokens": 3, "output_tokens": 2}
    async_to_sync(get_channel_layer().group_send)(group_name(run_id), {
        "type": "run.frames", "run_id": run_id,
        "frames": [frame("text_delta", content="Hello"), frame("final_result", output="Hello there"),
                   frame("complete", status="completed", usage=usage)]})
    thread.join(20)
    assert not thread.is_alive(), "the reply kept waiting on a frame reader that swallowed its cancel"
    assert outcome[0].kind == "completed" and outcome[0].text == "Hello there"
    assert outcome[0].usage == usage
    assert subscription.layer.calls == 2  # the reader was inside its next pop when the reply ended
