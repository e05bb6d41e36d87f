"""A channel thread follows a run whose worker was lost (agents/runner/recovery.py): the `resumed` frame puts the
reply back to what the run's last checkpoint holds, so the half the lost worker had streamed is not kept and the
answer streamed again is not written twice — the same message of the thread is edited, nothing more is posted.
Against the fake Slack Web API, with the run's frames published into its group as the runner does."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from agents.run_handle import group_name
from channelbots import delivery
from channelbots.platforms import client_for
from tests.channelbots.conftest import slack_bot
from tests.channelbots.test_delivery_watchdog import a_run

pytestmark = pytest.mark.django_db(transaction=True)


def frame(kind: str, **data) -> dict:
    return {"type": kind, "data": data}


def publish(run_id, frames: list[dict]) -> None:
    async_to_sync(get_channel_layer().group_send)(group_name(run_id), {"type": "run.frames", "frames": frames,
                                                                       "run_id": str(run_id)})


def test_a_resumed_run_edits_its_reply_back_to_the_checkpoint_and_posts_nothing_twice(org, owner, builder,
                                                                                       fake_slack, settings):
    settings.CHANNELBOTS_WATCHDOG_SECONDS = 60  # the frames below are the whole story
    bot = slack_bot(org, builder, fake=fake_slack)
    run = a_run(org, owner)
    live = delivery.LiveReply(client_for(bot), "C1", "100.1", interval=0)
    live.start()
    subscription = delivery.Subscription(run.pk)
    subscription.open()
    outcome: list = []
    follower = threading.Thread(target=lambda: outcome.append(delivery.follow(subscription, live, str(run.pk))))
    follower.start()

    publish(run.pk, [frame("model_request_start"), frame("text_delta", index=0, content="Let me check. "),
                     frame("tool_call", tool_call_id="c1", tool_name="lookup_order", args={}),
                     frame("tool_result", tool_call_id="c1", content={"status": "shipped"}, ok=True),
                     frame("model_request_start"), frame("text_delta", index=0, content="HALF OF A LOST ANSWER")])
    # The worker is lost; another goes on from the checkpoint taken after the tool step.
    publish(run.pk, [frame("resumed", run_id=str(run.pk), from_step=1,
                           parts=[{"type": "text", "text": "Let me check. "},
                                  {"type": "tool", "tool_call_id": "c1"}]),
                     frame("model_request_start"), frame("text_delta", index=0, content="Order 42 has shipped."),
                     frame("final_result", output=""), frame("complete", status="completed", usage={})])
    follower.join(30)
    assert not follower.is_alive()

    assert outcome[0].kind == "completed"
    assert outcome[0].text == "Let me check. Order 42 has shipped."
    live.finish(outcome[0].text)
    posts = fake_slack.answers("C1")
    assert len(posts) == 1  # the placeholder, edited: no second message in the thread
    assert posts[0].thread_ts == "100.1" and posts[0].final == "Let me check. Order 42 has shipped."
