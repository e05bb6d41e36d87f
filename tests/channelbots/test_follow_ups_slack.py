"""Follow-ups on Slack (capabilities/follow_ups): after the reply, the steps a separate model wrote (through the
real OpenAI client against the fake server) are posted in the same thread as Block Kit buttons; a click on the
signed interactions route is a new message from the clicker, answered in the thread; a forged or foreign button
starts nothing. End to end: the real routes, Celery worker and runner (main model scripted), the fake Slack."""

from __future__ import annotations

import pytest
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agents.models import Message, Run
from capabilities.follow_ups.models import FollowUp
from channelbots.follow_ups import ACTION
from channelbots.models import ChannelBot
from tests import factories
from tests.channelbots.conftest import bind, wait_until
from tests.fakes.openai_server import Reply


def echo_model() -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        yield f"You said: {messages[-1].parts[-1].content.split()[-1]}"

    return FunctionModel(stream_function=stream, model_name="scripted")


@pytest.fixture
def slack(celery_worker, scripted_model, fake_slack, fake_openai, sender, org, builder):
    helper = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", label="next steps",
                                     api_key="sk-followups-slack-0000", base_url=fake_openai.base_url)
    agent = factories.published_agent(org, builder, name="Support Agent", capabilities=[
        {"id": "follow_ups", "config": {"model_profile_id": str(helper.pk)}}])
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    scripted_model(echo_model())
    fake_openai.queue(Reply.text("Show me refunds\nTrack my order"))
    return fake_slack


def buttons_post(fake, channel="C1"):
    return wait_until(lambda: next((p for p in fake.answers(channel) if p.buttons()), None))


def test_slack_posts_the_steps_as_buttons_after_the_reply_in_the_same_thread(slack, sender, fake_openai):
    event = sender.message("<@UBOT> hello there", user="U7", channel="C1")
    assert sender.send(event).status_code == 200
    post = buttons_post(slack)
    assert post.thread_ts == event["ts"]
    assert [b["text"]["text"] for b in post.buttons()] == ["Show me refunds", "Track my order"]
    assert [b["action_id"] for b in post.buttons()] == [f"{ACTION}_0", f"{ACTION}_1"]
    reply = wait_until(lambda: next((p for p in slack.answers("C1") if p.final.startswith("You said")), None))
    # The buttons are their own message, below the reply in the thread (posted after its placeholder; the
    # reply's last edit may land a moment later).
    assert float(reply.ts) < float(post.ts)
    # The row says where the buttons went once Slack has answered the post: read it after that, not before
    # (under a CPU hog the test read it between the post and the write).
    follow_up = wait_until(lambda: FollowUp.objects.filter(delivered_to__has_key="message_ref").first())
    assert FollowUp.objects.count() == 1
    assert follow_up.delivered_to["message_ref"] == post.ts and follow_up.status == "ready"
    assert "tools" not in fake_openai.chat_requests[-1].json


def test_slack_a_click_is_a_new_message_from_the_clicker_answered_in_the_thread(slack, sender, fake_openai):
    event = sender.message("<@UBOT> hello there", user="U7", channel="C1")
    sender.send(event)
    post = buttons_post(slack)
    fake_openai.queue(Reply.text(""))  # the second answer gets no suggestions
    assert sender.click(post, f"{ACTION}_1", user="U8").status_code == 200
    answer = wait_until(lambda: next((p for p in slack.answers("C1") if p.final == "You said: order"), None))
    assert answer.thread_ts == event["ts"]
    turn = wait_until(lambda: Message.objects.filter(role="user", content="Track my order").first())
    assert turn.chat_identity is not None and turn.chat_identity.account_id == "U8"
    assert Run.objects.filter(surface="slack", prompt__contains="Track my order").count() == 1


def test_slack_a_button_moved_to_another_message_starts_nothing(slack, sender):
    sender.send(sender.message("<@UBOT> hello there", user="U7", channel="C1"))
    post = buttons_post(slack)
    post.ts = "1111.2222"  # the same value on a message the follow-ups were not posted on
    runs = Run.objects.count()
    assert sender.click(post, f"{ACTION}_0", user="U8").status_code == 200
    assert Run.objects.count() == runs
    assert not Message.objects.filter(content="Show me refunds").exists()
