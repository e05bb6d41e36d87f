"""Slack Socket Mode under the supervisor's ladder, against a fake that speaks the protocol: apps.connections.open
with the app-level token, `hello`, `events_api` envelopes acknowledged by envelope id, `disconnect` → a new
connection on a new ticket; the answer goes out through the fake Web API with the real slack-sdk client."""

from __future__ import annotations

import json
import logging
import threading

import pytest
from django.db import connection

from agents.models import Run
from channelbots import services, supervisor
from channelbots.models import ChannelBot
from channelbots.slack.parse import parse_incoming
from tests.channelbots.conftest import SLACK_TOKEN, bind, slack_bot, wait_until
from tests.channelbots.test_slack_end_to_end import streaming_model
from tests.fakes.slack_api import SlackEventSender
from tests.fakes.slack_socket import APP_TOKEN, FakeSlackSocket, fake_slack_socket  # noqa: F401  (fixture)


def socket_bot(org, user, fake: FakeSlackSocket, **data):
    return slack_bot(org, user, fake=fake, signing_secret=None, transport="polling",
                     **{"app_token": APP_TOKEN, **data})


def callback(event: dict) -> dict:
    return SlackEventSender(None, "", "").callback(event)


def mention(text: str, *, ts: str, channel: str = "C1", user: str = "U7") -> dict:
    return {"type": "app_mention", "user": user, "text": text, "channel": channel, "ts": ts, "event_ts": ts}


class Ladder:
    """run_ladder for one bot in a thread, stopped and joined on exit."""

    def __init__(self, bot) -> None:
        self.stop = threading.Event()
        self.result: list[str] = []
        self.thread = threading.Thread(target=self._run, args=(str(bot.pk),))

    def _run(self, bot_id: str) -> None:
        try:
            self.result.append(supervisor.run_ladder(bot_id, supervisor.session_opener(bot_id), self.stop))
        finally:
            connection.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def answers(fake, channel, text):
    return [p for p in fake.answers(channel) if p.final == text]


def test_an_app_mention_over_socket_mode_is_acked_claimed_once_and_answered_in_its_thread(
        celery_worker, scripted_model, org, builder, agent, fake_slack_socket):
    fake = fake_slack_socket
    bot = socket_bot(org, builder, fake)
    bind(agent, bot, builder, org)
    scripted_model(streaming_model("Socket answer."))
    with Ladder(bot):
        assert fake.wait_connections(1)
        payload = callback(mention("<@UBOT> status?", ts="1764000100.000100"))
        first = fake.send_event(payload)
        second = fake.redeliver(payload)  # Slack thought the ack was late: same event, new envelope
        wait_until(lambda: fake.acked(first) and fake.acked(second))
        post = wait_until(lambda: next(iter(answers(fake, "C1", "Socket answer.")), None))
        assert post.thread_ts == "1764000100.000100"
        wait_until(lambda: Run.objects.filter(status="completed").count() == 1)
        assert ChannelBot.objects.get(pk=bot.pk).connection_state == "connected"
    assert len(answers(fake, "C1", "Socket answer.")) == 1
    assert len(fake.answers("C1")) == 1  # the placeholder was edited, never a second post
    run = Run.objects.get()
    assert run.surface == "slack" and run.prompt == "status?" and run.chat_account == "slack:U7"
    assert fake.called("apps.connections.open") and all("token" not in c for c in fake.called("apps.connections.open"))


def test_a_disconnect_envelope_makes_the_client_reconnect_on_a_new_ticket_and_keep_answering(
        celery_worker, scripted_model, org, builder, agent, fake_slack_socket, caplog):
    caplog.set_level(logging.INFO, logger="channelbots.supervisor")
    fake = fake_slack_socket
    bot = socket_bot(org, builder, fake)
    bind(agent, bot, builder, org)
    scripted_model(streaming_model("Still here."))
    with Ladder(bot) as ladder:
        assert fake.wait_connections(1)
        fake.disconnect("refresh_requested")
        assert fake.wait_connections(2)
        assert len(fake.called("apps.connections.open")) == 2
        assert len(set(fake.tickets_used)) == 2
        envelope = fake.send_event(callback(mention("<@UBOT> after the refresh?", ts="1764000200.000100")))
        wait_until(lambda: fake.acked(envelope))
        wait_until(lambda: answers(fake, "C1", "Still here."))
        assert ladder.thread.is_alive()
    assert ladder.result == ["stopped"]
    assert "asked to reconnect (refresh_requested)" in caplog.text
    assert "session dropped" not in caplog.text  # a requested reconnect is a clean end, not a drop on the ladder
    assert Run.objects.filter(status="completed").count() == 1


def test_events_the_bot_should_not_answer_are_acked_and_run_nothing(org, builder, fake_slack_socket, monkeypatch,
                                                                    transactional_db):
    fake = fake_slack_socket
    bot = socket_bot(org, builder, fake)
    accepted: list = []
    monkeypatch.setattr("channelbots.router.accept", lambda incoming: accepted.append(incoming))
    with Ladder(bot):
        assert fake.wait_connections(1)
        edit = fake.send_event(callback({"type": "message", "subtype": "message_changed", "channel": "C1",
                                         "ts": "1764000300.000100", "message": {"text": "edited"}}))
        own = fake.send_event(callback({"type": "message", "user": "UBOT", "text": "my own post", "channel": "C1",
                                        "ts": "1764000300.000200"}))
        spoken = fake.send_event(callback(mention("<@UBOT> hi", ts="1764000300.000300")))
        wait_until(lambda: all(fake.acked(e) for e in (edit, own, spoken)))
        wait_until(lambda: len(accepted) == 1)
    assert accepted[0].message_id == "1764000300.000300" and accepted[0].via == "socket_mode"


def test_socket_mode_parses_an_envelope_exactly_as_the_events_api_does():
    payload = callback({"type": "message", "user": "U7", "text": "<@UBOT> files?", "channel": "D9",
                        "channel_type": "im", "ts": "1764000400.000100", "thread_ts": "1764000399.000100",
                        "subtype": "file_share", "files": [{"name": "a.pdf", "mimetype": "application/pdf",
                                                            "url_private_download": "https://x/a.pdf", "size": 3}]})
    envelope = FakeSlackSocket().envelope(json.loads(json.dumps(payload)))
    over_socket = parse_incoming(envelope["payload"], bot_id="b", via="socket_mode")
    over_http = parse_incoming(payload, bot_id="b")
    assert over_socket.to_json() | {"via": "x"} == over_http.to_json() | {"via": "x"}
    assert over_socket.thread_key == "1764000399.000100" and over_socket.in_existing_thread


@pytest.mark.django_db(transaction=True)
def test_a_bot_without_an_app_level_token_is_not_started(org, builder, fake_slack_socket):
    bot = slack_bot(org, builder, fake=fake_slack_socket, signing_secret=None, transport="polling")
    result = supervisor.run_ladder(str(bot.pk), supervisor.session_opener(str(bot.pk)), threading.Event(),
                                   wait=lambda d: pytest.fail("a missing credential must not be retried"))
    assert result == "not_started"
    bot.refresh_from_db()
    assert bot.connection_state == "not_started" and "app-level token" in bot.connection_reason
    assert fake_slack_socket.called("apps.connections.open") == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("app_token, error", [
    ("xapp-1-A0TEST-9999-revoked", "invalid_auth"),
    (SLACK_TOKEN, "not_allowed_token_type"),  # the bot token pasted where the app-level one belongs
])
def test_a_rejected_app_level_token_stops_as_not_started_without_leaking_it(org, builder, fake_slack_socket, caplog,
                                                                            app_token, error):
    bot = socket_bot(org, builder, fake_slack_socket, app_token=app_token)
    result = supervisor.run_ladder(str(bot.pk), supervisor.session_opener(str(bot.pk)), threading.Event(),
                                   wait=lambda d: pytest.fail("a rejected credential must not be retried"))
    assert result == "not_started"
    bot.refresh_from_db()
    assert bot.connection_state == "not_started" and error in bot.connection_reason
    assert fake_slack_socket.connections == 0
    assert app_token not in caplog.text and app_token not in bot.connection_reason


@pytest.mark.django_db(transaction=True)
def test_a_rejected_bot_token_stops_socket_mode_before_the_socket_opens(org, builder, fake_slack_socket):
    bot = socket_bot(org, builder, fake_slack_socket)
    services.set_credential(bot, "token", "xoxb-revoked-token-0000")
    result = supervisor.run_ladder(str(bot.pk), supervisor.session_opener(str(bot.pk)), threading.Event(),
                                   wait=lambda d: pytest.fail("a rejected credential must not be retried"))
    assert result == "not_started"
    bot.refresh_from_db()
    assert "rejected the bot token" in bot.connection_reason
    assert fake_slack_socket.called("apps.connections.open") == []


@pytest.mark.django_db(transaction=True)
def test_a_socket_that_drops_without_a_disconnect_is_retried_on_the_ladder(org, builder, fake_slack_socket):
    fake = fake_slack_socket
    bot = socket_bot(org, builder, fake)
    stop = threading.Event()
    states: list[str] = []
    delays: list[float] = []

    def wait(delay: float) -> bool:
        delays.append(delay)
        return stop.is_set()

    def record(state: str, reason: str) -> None:
        states.append(state)
        if states.count("connected") == 2:
            stop.set()

    fake.drop_after_hello = 1

    assert supervisor.run_ladder(str(bot.pk), supervisor.session_opener(str(bot.pk)), stop, wait=wait,
                                 record=record) == "stopped"
    assert states[:3] == ["connected", "retrying", "connected"] and delays == [5]
