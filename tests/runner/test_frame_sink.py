"""The runner's channel-layer sink: frames published a few messages per turn, in order, the last one never held
back, consecutive deltas of one part merged — and every listener reads batches as well as lone frames (the
REST API's wait mode once read only lone frames and waited its full five minutes whenever a run's `complete`
frame came in a batch)."""

from __future__ import annotations

import asyncio
import uuid

from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers

from agents.run_handle import group_name
from agents.runner.frames import ChannelLayerSink, coalesce, frame, frames_in


async def _listen(run_id: str):
    layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
    channel = await layer.new_channel()
    await layer.group_add(group_name(run_id), channel)
    return layer, channel


async def _publish_a_turn(window: float) -> tuple[list[dict], list[dict], float]:
    run_id = str(uuid.uuid4())
    layer, channel = await _listen(run_id)
    sink = ChannelLayerSink(run_id)
    # A layer of its own: closing the process-wide layer's pools would close every loop's connections.
    sink.layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
    sink.window = window
    sent = [frame("text_delta", index=0, content=f"w{i} ") for i in range(30)] + [
        frame("final_result", output="done"), frame("complete", status="completed")]
    try:
        for item in sent:
            await sink.send(item)
            await asyncio.sleep(0.002)  # a model streaming: the flusher gets to run between frames
        # send() of the ending frame returns once it is published: it is already in the listener's inbox.
        messages = [await asyncio.wait_for(layer.receive(channel), timeout=2)]
        while not any(f.get("type") == "complete" for f in frames_in(messages[-1])):
            messages.append(await asyncio.wait_for(layer.receive(channel), timeout=0.5))
    finally:
        await layer.group_discard(group_name(run_id), channel)
        await layer.close_pools()
        await sink.layer.close_pools()
    received = [f for message in messages for f in frames_in(message)]
    return sent, messages, received


def _text(frames):
    return "".join(f["data"]["content"] for f in frames if f["type"] == "text_delta")


def test_frames_within_the_window_go_out_as_one_message_in_order_and_the_ending_is_published_before_send_returns():
    sent, messages, received = asyncio.run(_publish_a_turn(window=5))
    assert received == [frame("text_delta", index=0, content=_text(sent)), *sent[-2:]]  # 30 deltas, one frame
    assert len(messages) == 1 and messages[0]["type"] == "run.frames"
    assert all(message["run_id"] for message in messages)


def test_without_a_window_every_frame_still_arrives_once_in_order():
    sent, messages, received = asyncio.run(_publish_a_turn(window=0))
    assert _text(received) == _text(sent)
    assert [f for f in received if f["type"] != "text_delta"] == sent[-2:]
    assert len(messages) > 1  # nothing waits for company


def test_only_consecutive_deltas_of_the_same_part_merge_and_the_given_frames_stay_as_they_were():
    frames = [
        frame("part_start", index=0, part_type="thinking"),
        frame("thinking_delta", index=0, content="Let me "),
        frame("thinking_delta", index=0, content="see."),
        frame("text_delta", index=1, content="It is "),
        frame("text_delta", index=1, content="12:00"),
        frame("text_delta", index=2, content=" (UTC)"),  # another part: its own frame
        frame("tool_call_delta", index=3, args_delta='{"tz": '),
        frame("tool_call_delta", index=3, args_delta='"UTC"}'),
        frame("tool_call", tool_call_id="c1", tool_name="clock", args={"tz": "UTC"}),
        frame("text_delta", index=1, content="."),  # after a tool call: not merged across it
    ]
    copies = [dict(f, data=dict(f["data"])) for f in frames]
    assert coalesce(frames) == [
        frame("part_start", index=0, part_type="thinking"),
        frame("thinking_delta", index=0, content="Let me see."),
        frame("text_delta", index=1, content="It is 12:00"),
        frame("text_delta", index=2, content=" (UTC)"),
        frame("tool_call_delta", index=3, args_delta='{"tz": "UTC"}'),
        frame("tool_call", tool_call_id="c1", tool_name="clock", args={"tz": "UTC"}),
        frame("text_delta", index=1, content="."),
    ]
    assert frames == copies


def test_frames_in_reads_a_lone_frame_a_batch_and_nothing_else():
    one = frame("complete", status="completed")
    assert frames_in({"type": "run.frame", "frame": one, "run_id": "r"}) == [one]
    assert frames_in({"type": "run.frames", "frames": [one, one], "run_id": "r"}) == [one, one]
    assert frames_in({"type": "something.else", "frame": one}) == []


def test_the_window_setting_reaches_the_sink(settings):
    settings.RUN_FRAME_FLUSH_SECONDS = 0.005
    assert ChannelLayerSink(uuid.uuid4()).window == 0.005


def test_the_window_widens_while_nobody_listens_and_a_listener_who_joins_gets_every_later_frame():
    async def scenario():
        run_id = str(uuid.uuid4())
        sink = ChannelLayerSink(run_id)
        sink.layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
        sink.window, sink.idle_window = 0, 30  # the short window: none at all; the idle one: longer than the test
        try:
            await sink.send(frame("part_start", index=0, part_type="text"))
            await sink.drain()  # published to nobody
            assert sink._listened is False
            layer, channel = await _listen(run_id)
            later = [frame("text_delta", index=0, content=f"w{i} ") for i in range(10)]
            for item in later:
                await sink.send(item)
                await asyncio.sleep(0.002)
            await sink.send(frame("complete", status="completed"))  # cuts the idle window short
            messages = [await asyncio.wait_for(layer.receive(channel), timeout=2)]
            await layer.group_discard(group_name(run_id), channel)
            await layer.close_pools()
            return later, messages
        finally:
            await sink.close()
            await sink.layer.close_pools()

    later, messages = asyncio.run(scenario())
    # Every frame sent after the first went out in one message, deltas merged, in order: nothing was lost.
    assert [f for message in messages for f in frames_in(message)] == [
        frame("text_delta", index=0, content=_text(later)), frame("complete", status="completed")]


def test_the_idle_window_setting_reaches_the_sink(settings):
    settings.RUN_FRAME_IDLE_FLUSH_SECONDS = 0.3
    assert ChannelLayerSink(uuid.uuid4()).idle_window == 0.3
