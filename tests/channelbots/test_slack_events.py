"""The Slack Events API route: signatures, the challenge, unknown bots, what is claimed and parsed.
The route only verifies, parses and claims; `dispatched` records the Celery tasks it enqueued."""

from __future__ import annotations

import json
import time

import pytest

from channelbots import dedup
from channelbots.incoming import Incoming
from channelbots.slack.parse import parse_incoming
from tests.channelbots.conftest import SIGNING_SECRET, SlackEventSender, slack_bot

pytestmark = pytest.mark.django_db


@pytest.fixture
def dispatched(monkeypatch):
    seen: list[Incoming] = []
    monkeypatch.setattr("channelbots.tasks.handle_incoming.delay",
                        lambda data, claimed: seen.append(Incoming.from_json(data)))
    return seen


def test_a_signed_url_verification_is_answered_with_its_challenge(sender):
    response = sender.post_raw(json.dumps({"type": "url_verification", "challenge": "abc123"}).encode())
    assert response.status_code == 200
    assert response.json() == {"challenge": "abc123"}


def test_an_unsigned_or_wrongly_signed_challenge_is_refused(sender, client):
    body = json.dumps({"type": "url_verification", "challenge": "abc123"}).encode()
    assert client.post(sender.path, data=body, content_type="application/json").status_code == 401
    assert sender.post_raw(body, secret="not-the-secret-at-all").status_code == 401


def test_a_request_older_than_five_minutes_is_refused(sender, dispatched):
    response = sender.send(sender.message("hi", channel_type="im", channel="D1"), timestamp=int(time.time()) - 301)
    assert response.status_code == 401
    assert dispatched == []


def test_a_bot_without_a_signing_secret_answers_500_to_everything(client, org, builder):
    bot = slack_bot(org, builder, signing_secret=None)
    s = SlackEventSender(client, str(bot.pk), SIGNING_SECRET)
    assert s.post_raw(json.dumps({"type": "url_verification", "challenge": "x"}).encode()).status_code == 500


def test_an_unknown_bot_id_answers_200_and_does_nothing(client, dispatched):
    s = SlackEventSender(client, "00000000-0000-0000-0000-000000000000", SIGNING_SECRET)
    assert s.send(s.message("hello", channel_type="im", channel="D1")).status_code == 200
    assert client.post("/api/v1/slack/not-a-uuid/events", data=b"{}", content_type="application/json").status_code == 200
    assert dispatched == []


def test_a_message_is_claimed_and_handed_to_celery_before_the_200(sender, dispatched):
    event = sender.message("hello", channel_type="im", channel="D1")
    assert sender.send(event).status_code == 200
    assert len(dispatched) == 1
    assert dispatched[0].message_id == event["ts"] and dispatched[0].chat_type == "dm"
    assert dedup.client().exists(dedup.key_for(sender.bot_id, "D1", event["ts"]))


def test_a_redelivered_message_is_accepted_and_dropped(sender, dispatched):
    event = sender.message("hello", channel_type="im", channel="D1")
    assert sender.send(event).status_code == 200
    again = sender.send(event, headers={"HTTP_X_SLACK_RETRY_NUM": "1", "HTTP_X_SLACK_RETRY_REASON": "http_timeout"})
    assert again.status_code == 200
    assert len(dispatched) == 1


def test_a_mention_arriving_as_message_and_app_mention_is_one_turn(sender, dispatched):
    ts = sender.next_ts()
    sender.send(sender.message("<@UBOT> hi", ts=ts))
    sender.send({"type": "app_mention", "user": "U1", "text": "<@UBOT> hi", "channel": "C1", "ts": ts})
    assert len(dispatched) == 1 and dispatched[0].mentioned


def test_a_retry_header_is_not_trusted_to_drop_a_first_delivery(sender, dispatched):
    event = sender.message("hello", channel_type="im", channel="D1")
    sender.send(event, headers={"HTTP_X_SLACK_RETRY_NUM": "2", "HTTP_X_SLACK_RETRY_REASON": "http_error"})
    assert len(dispatched) == 1 and "x-slack-retry-num=2" in dispatched[0].retry_note


def test_with_redis_down_the_message_is_processed_without_the_guarantee(sender, dispatched, monkeypatch, caplog):
    import redis

    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    monkeypatch.setattr("channelbots.dedup.client", lambda: dead)
    event = sender.message("hello", channel_type="im", channel="D1")
    sender.send(event)
    sender.send(event)
    assert len(dispatched) == 2
    assert "without the exactly-once guarantee" in caplog.text


def test_a_paused_bot_takes_nothing(sender, dispatched):
    from channelbots.models import ChannelBot

    ChannelBot.objects.filter(pk=sender.bot_id).update(is_paused=True)
    sender.send(sender.message("hello", channel_type="im", channel="D1"))
    assert dispatched == []


# ------------------------------------------------------------------ parse_incoming


def _payload(event):
    return {"type": "event_callback", "team_id": "T1", "event": event,
            "authorizations": [{"user_id": "UBOT", "is_bot": True}]}


@pytest.mark.parametrize(
    "event",
    [
        {"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "1.1", "message": {}},
        {"type": "message", "subtype": "message_deleted", "channel": "C1", "ts": "1.1"},
        {"type": "message", "subtype": "channel_join", "user": "U1", "channel": "C1", "ts": "1.1", "text": "joined"},
        {"type": "message", "subtype": "channel_topic", "user": "U1", "channel": "C1", "ts": "1.1", "text": "t"},
        {"type": "message", "user": "UBOT", "channel": "C1", "ts": "1.1", "text": "my own post"},
        {"type": "message", "bot_id": "B1", "user": "U2", "channel": "C1", "ts": "1.1", "text": "another bot"},
        {"type": "reaction_added", "user": "U1", "item": {}},
    ],
)
def test_the_platform_describing_the_channel_is_not_a_turn(event):
    assert parse_incoming(_payload(event), bot_id="b") is None


def test_a_file_share_carries_the_files_and_the_caption_as_one_turn():
    event = {"type": "message", "subtype": "file_share", "user": "U1", "channel": "D1", "channel_type": "im",
             "ts": "5.5", "text": "what do you see?",
             "files": [{"name": "shot.png", "mimetype": "image/png", "size": 10, "url_private_download": "http://x/f"}]}
    incoming = parse_incoming(_payload(event), bot_id="b")
    assert incoming.text == "what do you see?" and [f.name for f in incoming.files] == ["shot.png"]


def test_a_new_top_level_message_is_keyed_by_the_thread_its_reply_will_open():
    top = parse_incoming(_payload({"type": "message", "user": "U1", "channel": "C1", "ts": "10.1", "text": "q"}),
                         bot_id="b")
    reply = parse_incoming(_payload({"type": "message", "user": "U2", "channel": "C1", "ts": "10.9",
                                     "thread_ts": "10.1", "text": "follow-up"}), bot_id="b")
    assert top.thread_key == reply.thread_key == "10.1"
    assert top.reply_to == "10.1" and not top.in_existing_thread and reply.in_existing_thread


@pytest.mark.parametrize(
    ("text", "channel_type", "mentioned"),
    [
        ("<@UBOT> hi", "channel", True),
        ("hi <@UBOT>, how are you", "channel", True),
        ("hi <@U999>", "channel", False),
        ("<!channel> deploy", "channel", False),
        ("@agent-bot plain text", "channel", False),
    ],
)
def test_a_mention_is_what_slack_resolved_anywhere_in_the_text(text, channel_type, mentioned):
    event = {"type": "message", "user": "U1", "channel": "C1", "channel_type": channel_type, "ts": "1.2", "text": text}
    assert parse_incoming(_payload(event), bot_id="b").mentioned is mentioned


def test_the_signing_secret_never_appears_in_a_response(sender):
    response = sender.post_raw(json.dumps({"type": "url_verification", "challenge": "c"}).encode())
    assert SIGNING_SECRET not in response.content.decode()
