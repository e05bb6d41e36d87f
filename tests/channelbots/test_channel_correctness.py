"""Channel correctness (issue 27): history bound to the thread, long answers split at the platform's limit,
`/new` in a direct message, the chat account as a turn's author, and a claim that lapses when its process died
before the run started."""

from __future__ import annotations

import json
import time

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Message, Run
from channelbots import dedup, services
from channelbots.delivery import split_text
from channelbots.models import ChannelBot, ChannelIdentity, ChannelSession
from tests import factories
from tests.channelbots.conftest import actor, bind, wait_until
from tests.channelbots.test_slack_end_to_end import streaming_model
from tests.fakes.mattermost import fake_mattermost  # noqa: F401
from tests.fakes.telegram_api import fake_telegram, telegram_message  # noqa: F401

# ------------------------------------------------------------------ read_channel_history: the thread


def reads_history_then_echoes() -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            yield {0: DeltaToolCall(name="read_channel_history", json_args="{}", tool_call_id="h1")}
            return
        yield "History: " + json.dumps(returns[-1].content)

    return FunctionModel(stream_function=stream, model_name="scripted")


def test_read_channel_history_reads_the_thread_it_is_called_from_not_the_room(celery_worker, scripted_model,
                                                                             fake_slack, sender, org, builder):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org, channel_tools=["read_channel_history"])
    fake_slack.users["U2"] = {"name": "ada", "profile": {"display_name": "Ada"}}
    # The room has its own talk (served by conversations.history from the fake's posts).
    fake_slack.api_chat_postMessage({"channel": "C1", "text": "ROOM: lunch at noon?"})
    fake_slack.replies[("C1", "500.1")] = [
        {"user": "U2", "text": "THREAD: we decided on plan B", "ts": "500.1"},
        {"user": "U2", "text": "THREAD: ship on Friday", "ts": "500.2"},
    ]
    scripted_model(reads_history_then_echoes())
    sender.send(sender.message("<@UBOT> summarise what we decided above", channel="C1", thread_ts="500.1"))
    post = wait_until(lambda: next((p for p in fake_slack.answers("C1") if p.final.startswith("History:")), None))
    assert "plan B" in post.final and "ship on Friday" in post.final
    assert "lunch" not in post.final
    assert fake_slack.called("conversations.history") == []
    # Two reads of the thread: the mid-thread context (once per session), then the tool's own.
    assert [c["ts"] for c in fake_slack.called("conversations.replies")] == ["500.1", "500.1"]


def test_slack_thread_history_pages_through_a_long_thread_and_keeps_the_newest(db, org, builder, fake_slack):
    from channelbots.slack.client import SlackClient
    from tests.channelbots.conftest import slack_bot

    bot = slack_bot(org, builder, fake=fake_slack)
    fake_slack.replies_page = 2
    fake_slack.replies[("C1", "1.0")] = [{"user": "U1", "text": f"m{i}", "ts": f"1.{i}"} for i in range(7)]
    rows = SlackClient(bot, services.reveal_credentials(bot)).thread_tail("C1", "1.0", 3)
    assert [r["text"] for r in rows] == ["m4", "m5", "m6"]


def test_mattermost_history_reads_the_thread_by_its_root(db, org, builder, fake_mattermost):  # noqa: F811
    from capabilities.channel_tools.capability import _thread_history
    from channelbots.platforms import PlatformError, client_for

    bot = services.create_bot(actor=actor(builder, org), data={
        "platform": "mattermost", "name": "Ops", "token": fake_mattermost.token, "api_base_url": fake_mattermost.url})
    fake_mattermost.threads["root1"] = [
        {"id": "root1", "user_id": "ada", "message": "THREAD: the plan", "create_at": 1},
        {"id": "r2", "user_id": "bob", "message": "THREAD: agreed", "create_at": 2, "root_id": "root1"},
    ]
    rows = _thread_history({"chat_id": "town", "thread": "root1"}, client_for(bot), 20)
    assert [r["text"] for r in rows] == ["THREAD: the plan", "THREAD: agreed"]
    assert any(call == "GET /posts/root1/thread" for call, _ in fake_mattermost.calls)
    assert not any(call.startswith("GET /channels/town/posts") for call, _ in fake_mattermost.calls)
    with pytest.raises(PlatformError):
        _thread_history({"chat_id": "town", "thread": ""}, client_for(bot), 20)


def test_telegram_is_not_offered_history_at_all():
    from types import SimpleNamespace

    from capabilities.channel_tools.capability import ChannelToolsConfig, build

    ctx = SimpleNamespace(config=ChannelToolsConfig(tools=["read_channel_history", "get_channel_info"]),
                          deps=SimpleNamespace(surface="telegram"))
    (toolset,) = build(ctx)
    assert sorted(toolset.tools) == ["get_channel_info"]


# ------------------------------------------------------------------ long answers


def test_split_text_cuts_at_paragraphs_then_sentences_and_loses_nothing():
    paragraph = "word " * 150  # 750 characters
    text = "\n\n".join(paragraph.strip() + f" end{i}." for i in range(8))
    parts = split_text(text, 2000)
    assert len(parts) > 1 and all(len(p) <= 2000 for p in parts)
    assert all(p.endswith(".") for p in parts)  # each cut fell on a paragraph break
    assert " ".join(" ".join(parts).split()) == " ".join(text.split())
    sentences = " ".join(f"Sentence number {i} is here." for i in range(200))
    parts = split_text(sentences, 500)
    assert all(len(p) <= 500 and p.endswith(".") for p in parts)
    assert " ".join(parts) == sentences
    assert split_text("short", 4096) == ["short"]
    assert all(len(p) <= 100 for p in split_text("x" * 450, 100))  # no boundary at all: a hard cut


def test_a_telegram_answer_over_4096_characters_arrives_whole_in_several_messages(celery_worker, scripted_model,
                                                                                  client, org, builder,
                                                                                  fake_telegram):
    from tests.channelbots.test_telegram import post_update, secret_of, telegram_bot

    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram)
    bind(agent, bot, builder, org)
    answer = "\n\n".join(f"Paragraph {i}. " + "lorem ipsum dolor " * 60 for i in range(9))  # ~9,800 characters
    assert len(answer) > 2 * 4096
    scripted_model(streaming_model(answer))
    message = telegram_message("@acme_bot tell me everything", chat_id=-7, chat_type="group",
                               entities=[{"type": "mention", "offset": 0, "length": 9}])
    post_update(client, bot, {"update_id": 1, "message": message}, secret_of(bot))
    wait_until(lambda: Run.objects.filter(status="completed").exists())

    def shown() -> list[str]:
        return [(m["edits"][-1] if m["edits"] else m["text"]) for m in fake_telegram.sent("-7")]

    wait_until(lambda: len(shown()) >= 3 and " ".join(" ".join(shown()).split()) == " ".join(answer.split()))
    assert all(len(text) <= 4096 for text in shown())
    assert all(m["reply"]["message_id"] == message["message_id"] for m in fake_telegram.sent("-7"))


def test_a_slack_answer_over_its_limit_is_split_and_the_live_edit_stays_on_the_last_message(
        celery_worker, scripted_model, fake_slack, sender, org, builder):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    answer = "\n\n".join(f"Part {i}: " + "some words here " * 40 for i in range(10))  # ~6,600 characters
    scripted_model(streaming_model(answer))
    sender.send(sender.message("<@UBOT> long please", channel="C1"))
    wait_until(lambda: Run.objects.filter(status="completed").exists())

    def joined() -> str:
        return " ".join(" ".join(p.final for p in fake_slack.answers("C1")).split())

    wait_until(lambda: joined() == " ".join(answer.split()))
    posts = fake_slack.answers("C1")
    assert len(posts) == 2 and all(len(p.final) <= 4000 for p in posts)
    assert posts[0].text == "…" and posts[1].text != "…"  # the second message was posted for the overflow


# ------------------------------------------------------------------ /new


def test_new_in_a_direct_message_starts_a_fresh_conversation(celery_worker, scripted_model, client, org, builder,
                                                             member, fake_telegram):
    from tests.channelbots.test_telegram import post_update, secret_of, telegram_bot

    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram)
    bind(agent, bot, builder, org)
    ChannelIdentity.objects.create(organization=org, platform="telegram", workspace="", account_id="9", user=member)
    seen: list = []
    scripted_model(streaming_model("Noted.", seen=seen))
    secret = secret_of(bot)

    def say(text: str, update_id: int) -> None:
        post_update(client, bot, {"update_id": update_id, "message": telegram_message(text, chat_id=9)}, secret)

    say("my code word is PELICAN", 1)
    wait_until(lambda: Run.objects.filter(status="completed").count() == 1)
    first = Run.objects.get().conversation_id
    say("/new", 2)
    wait_until(lambda: any("Fresh start" in m["text"] for m in fake_telegram.sent("9")))
    say("what was my code word?", 3)
    wait_until(lambda: Run.objects.filter(status="completed").count() == 2)
    second = Run.objects.exclude(conversation_id=first).get()
    assert second.conversation_id != first
    session = ChannelSession.objects.get(bot=bot)
    assert session.conversation_id == second.conversation_id and session.conversation.owner_id == member.pk
    assert "PELICAN" not in str(seen[-1][0])  # the fresh conversation carries nothing of the old one
    assert Message.objects.filter(conversation_id=first, role="user").count() == 1  # the old one is kept


def test_new_in_a_group_changes_nothing_and_says_where_it_works(celery_worker, client, org, builder, fake_telegram):
    from tests.channelbots.test_telegram import post_update, secret_of, telegram_bot

    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram)
    bind(agent, bot, builder, org)
    message = telegram_message("/new@acme_bot", chat_id=-3, chat_type="group",
                               entities=[{"type": "bot_command", "offset": 0, "length": 13}])
    post_update(client, bot, {"update_id": 1, "message": message}, secret_of(bot))
    told = wait_until(lambda: next(iter(fake_telegram.sent("-3")), None))
    assert "direct message" in told["text"]
    assert Run.objects.count() == 0 and ChannelSession.objects.count() == 0


# ------------------------------------------------------------------ the turn's author


def test_an_unlinked_senders_turn_is_written_by_the_chat_account_not_the_binding_creator(
        celery_worker, scripted_model, fake_slack, sender, org, builder, member):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    scripted_model(streaming_model("Hi."))
    sender.send(sender.message("<@UBOT> hello", user="U7", channel="C1"))
    wait_until(lambda: Run.objects.filter(status="completed").exists())
    run = Run.objects.get()
    assert run.user_id == builder.pk  # the authority is still the binding's
    turn = Message.objects.get(run=run, role="user")
    identity = ChannelIdentity.objects.get(account_id="U7")
    assert turn.author_id is None and turn.chat_identity_id == identity.pk
    assert turn.author_label == "slack:U7"
    # A linked sender's turn is written by the member, through the same account row.
    ChannelIdentity.objects.create(organization=org, platform="slack", workspace="T1", account_id="U5", user=member)
    sender.send(sender.message("<@UBOT> and me", user="U5", channel="C1"))
    wait_until(lambda: Run.objects.filter(status="completed").count() == 2)
    linked = Message.objects.get(run__chat_account="slack:U5", role="user")
    assert linked.author_id == member.pk and linked.chat_identity.account_id == "U5"


# ------------------------------------------------------------------ claims of deliveries that died


def test_a_claim_is_short_until_the_run_starts_and_long_after(celery_worker, scripted_model, fake_slack, sender,
                                                             org, builder):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    scripted_model(streaming_model("Done."))
    event = sender.message("<@UBOT> hi", channel="C1")
    sender.send(event)
    wait_until(lambda: any(p.final == "Done." for p in fake_slack.answers("C1")))
    key = dedup.key_for(sender.bot_id, "C1", event["ts"])
    assert dedup.client().ttl(key) > dedup.PENDING_TTL_SECONDS  # held once the run started
    assert dedup.client().get(key) == b"started"


def test_a_delivery_whose_process_died_before_the_run_is_answered_on_redelivery(celery_worker, scripted_model,
                                                                              fake_slack, sender, org, builder,
                                                                              monkeypatch, settings):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org)
    scripted_model(streaming_model("Here at last."))
    settings.CHANNELBOTS_CLAIM_PENDING_SECONDS = 3
    event = sender.message("<@UBOT> are you there?", channel="C1")
    lost: list = []
    with monkeypatch.context() as patch:
        # The task is handed over and its process dies before anything runs.
        patch.setattr("channelbots.tasks.handle_incoming.delay", lambda data, claimed: lost.append(data))
        sender.send(event)
    assert len(lost) == 1
    key = dedup.key_for(sender.bot_id, "C1", event["ts"])
    assert 0 < dedup.client().pttl(key) <= 3000  # not the 15 minutes a started run's claim lasts
    wait_until(lambda: not dedup.client().exists(key), timeout=10)
    sender.send(event)  # the platform's redelivery
    wait_until(lambda: any(p.final == "Here at last." for p in fake_slack.answers("C1")))
    assert Run.objects.count() == 1


def test_the_pending_claim_defaults_to_two_minutes(db):
    assert dedup.pending_ttl() == 120 and dedup.CLAIM_TTL_SECONDS == 900
    message_id = f"m{time.time()}"
    assert dedup.claim("bot-x", "C1", message_id) is dedup.Claim.CLAIMED
    assert 100 < dedup.client().ttl(dedup.key_for("bot-x", "C1", message_id)) <= 120
    dedup.release("bot-x", "C1", message_id)


class RecordingClient:
    """Stands in for a platform client inside LiveReply only (the end-to-end tests above use the fakes)."""

    can_edit = True
    max_text = 100

    def __init__(self) -> None:
        from types import SimpleNamespace

        self.bot = SimpleNamespace(pk="bot")
        self.messages: dict[str, str] = {}
        self.edited: list[str] = []

    def post(self, chat_id, text, *, reply_to=""):
        ref = f"m{len(self.messages) + 1}"
        self.messages[ref] = text
        return ref

    def edit(self, chat_id, ref, text):
        assert len(text) <= self.max_text
        self.messages[ref] = text
        self.edited.append(ref)


def test_the_live_edit_moves_on_to_the_last_message_when_the_answer_outgrows_one():
    from channelbots.delivery import LiveReply

    client = RecordingClient()
    live = LiveReply(client, "C1", "1.0", interval=0)  # type: ignore[arg-type]
    live.start()
    live.text = "First paragraph, long enough to matter here. " * 2
    live.flush()
    assert list(client.messages) == ["m1"]
    live.text += "\n\nSecond paragraph grows the answer past the limit of one message."
    live.flush()
    assert list(client.messages) == ["m1", "m2"]
    client.edited.clear()
    live.text += " More words."
    live.flush()
    assert client.edited == ["m2"] and live.ref == "m2"  # the first message is left as it is
    live.finish(live.text)
    assert all(len(t) <= 100 for t in client.messages.values())
    assert " ".join(" ".join(client.messages.values()).split()) == " ".join(live.text.split())


def test_a_mattermost_answer_over_16383_characters_arrives_whole_in_several_posts_of_the_thread(
        celery_worker, scripted_model, client, org, builder, fake_mattermost):  # noqa: F811
    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = services.create_bot(actor=actor(builder, org), data={
        "platform": "mattermost", "name": "Ops", "token": fake_mattermost.token, "api_base_url": fake_mattermost.url,
        "transport": "webhook", "webhook_secret": "tok-from-mattermost-1"})
    bind(agent, bot, builder, org)
    answer = "\n\n".join(f"Section {i}. " + "plenty of words here " * 100 for i in range(17))  # ~36,000 characters
    assert len(answer) > 2 * 16383
    scripted_model(streaming_model(answer))
    body = {"token": "tok-from-mattermost-1", "channel_id": "town", "post_id": "q1", "user_id": "u-bob",
            "user_name": "bob", "text": "opsbot tell me everything", "trigger_word": "opsbot"}
    assert client.post(f"/api/v1/mattermost/{bot.pk}/webhook", body).status_code == 200
    wait_until(lambda: Run.objects.filter(status="completed").exists())

    def shown() -> list[str]:
        return [(p["edits"][-1] if p["edits"] else p["message"]) for p in fake_mattermost.answers("town")]

    wait_until(lambda: len(shown()) >= 3 and " ".join(" ".join(shown()).split()) == " ".join(answer.split()))
    assert all(len(text) <= 16383 for text in shown())
    assert all(p["root_id"] == "q1" for p in fake_mattermost.answers("town"))
