"""👍/👎 reactions as feedback on the run that posted the message (channelbots/reactions.py): the answer is answered
for real through the fake platform (the live reply's messages remembered), then the platform's reaction event is
delivered through the same route as messages; a reaction on any other message, another organization's bot, or a
bad signature stores nothing."""

from __future__ import annotations

import json

import pytest

from agents.models import Feedback, Message, Run
from channelbots import reactions
from channelbots.models import ChannelBot, PostedReply
from tests import factories
from tests.channelbots.conftest import SIGNING_SECRET, bind, slack_bot, wait_until
from tests.channelbots.test_slack_end_to_end import streaming_model
from tests.channelbots.test_telegram import post_update, secret_of, telegram_bot
from tests.fakes.slack_api import SlackEventSender
from tests.fakes.telegram_api import fake_telegram, telegram_message  # noqa: F401  (fixture)


def stored() -> list[tuple]:
    return list(Feedback.objects.values_list("run_id", "rating", "source", "rater", "user_id"))


def slack_reaction(sender: SlackEventSender, kind: str, emoji: str, *, ts: str, user: str = "U7",
                   channel: str = "C1") -> int:
    event = {"type": kind, "user": user, "reaction": emoji, "item_user": "UBOT",
             "item": {"type": "message", "channel": channel, "ts": ts}, "event_ts": sender.next_ts()}
    return sender.post_raw(json.dumps(sender.callback(event)).encode()).status_code


@pytest.fixture
def answered_in_slack(celery_worker, scripted_model, fake_slack, sender, agent, builder, org):
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    scripted_model(streaming_model("The deploy is green."))
    question = sender.message("<@UBOT> is the deploy green?", user="U7", channel="C1")
    sender.send(question)
    post = wait_until(lambda: next((p for p in fake_slack.answers("C1") if p.final == "The deploy is green."), None))
    wait_until(lambda: PostedReply.objects.filter(message_ref=post.ts).exists())
    return Run.objects.get(), post, question


def test_a_thumb_on_a_slack_answer_rates_its_run_and_taking_it_away_takes_the_rating_back(answered_in_slack, sender):
    run, post, _ = answered_in_slack
    assert slack_reaction(sender, "reaction_added", "+1::skin-tone-3", ts=post.ts) == 200
    assert stored() == [(run.pk, "up", "slack", "slack:T1:U7", None)]
    answer = Feedback.objects.get()
    assert answer.message_id == Message.objects.filter(run=run, role="assistant").order_by("id").first().pk
    assert answer.rated_by == "U7 (Slack)"
    # A 👎 from the same person replaces it; taking away a thumb they did not rate with changes nothing.
    assert slack_reaction(sender, "reaction_added", "-1", ts=post.ts) == 200
    assert slack_reaction(sender, "reaction_removed", "+1", ts=post.ts) == 200
    assert stored() == [(run.pk, "down", "slack", "slack:T1:U7", None)]
    assert slack_reaction(sender, "reaction_removed", "-1", ts=post.ts) == 200
    assert stored() == []


def test_a_reaction_on_anything_but_the_bots_answer_stores_nothing(answered_in_slack, sender, fake_slack, client,
                                                                   org, builder):
    _, post, question = answered_in_slack
    posts = len(fake_slack.called("chat.postMessage"))
    assert slack_reaction(sender, "reaction_added", "-1", ts=question["ts"]) == 200  # the person's own message
    assert slack_reaction(sender, "reaction_added", "-1", ts=post.ts, channel="C2") == 200  # the same ts elsewhere
    assert slack_reaction(sender, "reaction_added", "heart", ts=post.ts) == 200  # not a thumb
    assert slack_reaction(sender, "reaction_added", "-1", ts=post.ts, user="UBOT") == 200  # the bot itself
    # Another organization's bot, told of our answer's message, finds nothing of ours.
    other = factories.organization(name="Other Corp")
    theirs = slack_bot(other, factories.member(other, "owner"), fake=fake_slack)
    outsider = SlackEventSender(client, str(theirs.pk), SIGNING_SECRET)
    assert slack_reaction(outsider, "reaction_added", "-1", ts=post.ts) == 200
    # A forged event (bad signature) is refused at the door.
    event = {"type": "reaction_added", "user": "U7", "reaction": "-1", "item": {"type": "message", "channel": "C1",
                                                                                 "ts": post.ts}}
    forged = sender.post_raw(json.dumps(sender.callback(event)).encode(), secret="not-the-secret")
    assert forged.status_code == 401
    assert stored() == []
    assert len(fake_slack.called("chat.postMessage")) == posts  # nothing was posted in reply to a reaction


def test_a_thumb_on_a_telegram_answer_rates_its_run(celery_worker, scripted_model, client, org, builder,
                                                    fake_telegram):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram)
    bind(agent, bot, builder, org)
    scripted_model(streaming_model("Status is fine."))
    message = telegram_message("@acme_bot status?", chat_id=-100, chat_type="group",
                               entities=[{"type": "mention", "offset": 0, "length": 9}])
    assert post_update(client, bot, {"update_id": 1, "message": message}, secret_of(bot)).status_code == 200
    wait_until(lambda: any(m["edits"][-1:] == ["Status is fine."] for m in fake_telegram.sent("-100")), timeout=60)
    posted = wait_until(lambda: PostedReply.objects.filter(bot=bot).first())
    run = Run.objects.get()
    assert posted.run_id == run.pk and ("-100", int(posted.message_ref)) in fake_telegram.messages

    def reaction(update_id: int, new: list[str], old: list[str], message_id: int) -> int:
        change = {"chat": {"id": -100, "type": "group"}, "message_id": message_id, "user": {"id": 9, "first_name": "Ada"},
                  "date": 1764000100, "new_reaction": [{"type": "emoji", "emoji": e} for e in new],
                  "old_reaction": [{"type": "emoji", "emoji": e} for e in old]}
        return post_update(client, bot, {"update_id": update_id, "message_reaction": change}, secret_of(bot)).status_code

    assert reaction(2, ["👎"], [], int(posted.message_ref)) == 200
    assert stored() == [(run.pk, "down", "telegram", "telegram::9", None)]
    assert reaction(3, ["❤"], ["👎"], int(posted.message_ref)) == 200  # the thumb swapped for a heart: taken back
    assert stored() == []
    # On the person's own message (not the bot's answer): nothing. No run was started by a reaction either.
    assert reaction(4, ["👍"], [], int(posted.message_ref) + 1000) == 200
    assert stored() == [] and Run.objects.count() == 1
    # The webhook asks Telegram for reactions by name (it sends none otherwise).
    from channelbots.telegram.client import ALLOWED_UPDATES

    assert "message_reaction" in ALLOWED_UPDATES


@pytest.mark.django_db
def test_a_mattermost_reaction_event_rates_the_run_whose_post_it_is(org, builder, agent):
    from tests.channelbots.test_supervisor_loop import mm_bot
    from tests.fakes.mattermost import FakeMattermost

    with FakeMattermost() as fake:
        bot = mm_bot(org, builder, fake)
    from agents.models import Conversation

    conversation = Conversation.objects.create(organization=org, agent=agent, surface="mattermost", title="Ops")
    run = Run.objects.create(organization=org, agent=agent, surface="mattermost", prompt="status?",
                             version=agent.environments.get(name="production").version, status="completed",
                             conversation=conversation)
    Message.objects.create(conversation=conversation, run=run, role="assistant", content="All green.")
    reactions.remember(bot, "chan1", ["post1"], run.pk)

    def event(kind: str, emoji: str, post_id: str = "post1", user_id: str = "u9") -> dict:
        return {"event": kind, "broadcast": {"channel_id": "chan1"},
                "data": {"reaction": json.dumps({"user_id": user_id, "post_id": post_id, "emoji_name": emoji})}}

    assert reactions.handle(bot, reactions.mattermost_reaction(event("reaction_added", "thumbsup")))
    assert stored() == [(run.pk, "up", "mattermost", "mattermost::u9", None)]
    assert reactions.handle(bot, reactions.mattermost_reaction(event("reaction_removed", "thumbsup")))
    assert stored() == []
    assert reactions.apply(bot, reactions.mattermost_reaction(event("reaction_added", "-1", post_id="other"))) == \
        "not_ours"
    assert reactions.mattermost_reaction(event("posted", "-1")) is None
    assert stored() == []
