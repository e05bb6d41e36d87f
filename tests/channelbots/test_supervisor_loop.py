"""The supervisor's main loop (`Supervisor.serve`, `manage.py channel_supervisor`) against the fake Telegram
Bot API (getUpdates long polling) and the fake Mattermost (WebSocket event stream): which bots get a session,
reopening on every change the services notify after commit, "not started" on a rejected credential, and a
clean shutdown. Every wait is on a condition with a timeout."""

from __future__ import annotations

import os
import signal
import threading

import pytest
from django.core.management import call_command
from django.db import transaction

from agenticos import ratelimit
from agents.models import Run
from channelbots import services, supervisor
from channelbots.models import ChannelBot
from tests import factories
from tests.channelbots.conftest import actor, bind, wait_until
from tests.channelbots.test_slack_end_to_end import streaming_model
from tests.fakes.mattermost import FakeMattermost, fake_mattermost, start_fake_mattermost  # noqa: F401
from tests.fakes.telegram_api import FakeTelegram, fake_telegram, telegram_message  # noqa: F401


@pytest.fixture(autouse=True)
def _short_polls(settings):
    settings.CHANNELBOTS_POLL_TIMEOUT = 0


def telegram_bot(org, user, fake: FakeTelegram, *, transport="polling", token: str | None = None):
    return services.create_bot(actor=actor(user, org), data={
        "platform": "telegram", "name": "Tg", "token": token or fake.token, "api_base_url": fake.url,
        "transport": transport})


def mm_bot(org, user, fake: FakeMattermost, *, transport="polling"):
    return services.create_bot(actor=actor(user, org), data={
        "platform": "mattermost", "name": "Ops", "token": fake.token, "api_base_url": fake.url,
        "transport": transport})


def get_me_calls(fake: FakeTelegram) -> int:
    with fake.lock:
        return sum(1 for name, _ in fake.calls if name == "getMe")


def state(bot) -> str:
    return ChannelBot.objects.get(pk=bot.pk).connection_state


class Running:
    """`Supervisor.serve()` in a thread, as the command runs it; stopped through its event and joined."""

    def __init__(self) -> None:
        self.supervisor = supervisor.Supervisor()
        self.thread = threading.Thread(target=self.supervisor.serve, name="supervisor-under-test")

    def __enter__(self) -> Running:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self.supervisor.stopping.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()

    def session(self, bot) -> threading.Thread | None:
        entry = self.supervisor.workers.get(str(bot.pk))
        return entry[0] if entry and entry[0].is_alive() else None

    def live_session(self, bot) -> threading.Thread:
        return wait_until(lambda: self.session(bot) if state(bot) == "connected" else None)

    def new_session(self, bot, old: threading.Thread) -> threading.Thread:
        """Wait for the replacement: the old thread ended, another one is connected."""
        wait_until(lambda: not old.is_alive())
        return wait_until(lambda: (s := self.session(bot)) is not None and s is not old and state(bot) == "connected"
                          and s)

    def gone(self, bot, old: threading.Thread) -> None:
        wait_until(lambda: not old.is_alive() and str(bot.pk) not in self.supervisor.workers
                   and str(bot.pk) not in self.supervisor.retiring)

    def looked_again(self, bot) -> None:
        """Notify a change and wait for a reconcile pass that started after it."""
        for _ in range(2):  # the second pass surely started after the notification
            before = self.supervisor.passes
            supervisor.notify_changed(str(bot.pk))
            wait_until(lambda: self.supervisor.passes > before)  # noqa: B023


@pytest.mark.django_db(transaction=True)
def test_it_opens_a_session_for_each_active_polling_or_stream_bot_and_none_for_the_rest(org, builder, fake_telegram,
                                                                                       fake_mattermost):
    polled = telegram_bot(org, builder, fake_telegram)
    streamed = mm_bot(org, builder, fake_mattermost)
    webhook = telegram_bot(org, builder, fake_telegram, transport="webhook")
    paused = telegram_bot(org, builder, fake_telegram)
    services.set_paused(actor=actor(builder, org), bot=paused, paused=True)
    with Running() as running:
        running.live_session(polled)
        running.live_session(streamed)
        assert fake_mattermost.stream_opened.wait(15)
        wait_until(lambda: fake_mattermost.auth_challenges == [fake_mattermost.token])
        assert set(running.supervisor.workers) == {str(polled.pk), str(streamed.pk)}
    assert state(webhook) == "idle"
    assert ChannelBot.objects.get(pk=paused.pk).connection_state != "connected"


@pytest.mark.django_db(transaction=True)
def test_a_bot_registered_while_it_runs_is_opened_once_its_row_commits(org, builder, fake_telegram):
    listener = ratelimit.client().pubsub(ignore_subscribe_messages=True)
    listener.subscribe(supervisor.changes_channel())
    try:
        with Running() as running:
            wait_until(lambda: running.supervisor.passes >= 1)
            with transaction.atomic():
                bot = telegram_bot(org, builder, fake_telegram)
                # Inside the transaction nobody has been told: the supervisor could not read the row yet.
                assert listener.get_message(timeout=0.3) is None
                assert str(bot.pk) not in running.supervisor.workers
            message = wait_until(lambda: listener.get_message(timeout=0.5))
            assert message["data"].decode() == str(bot.pk)
            running.live_session(bot)
            assert get_me_calls(fake_telegram) >= 1
    finally:
        listener.close()


def test_a_polled_message_is_answered_through_the_running_supervisor(celery_worker, scripted_model, org, builder,
                                                                     fake_telegram):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram)
    bind(agent, bot, builder, org)
    scripted_model(streaming_model("Supervised."))
    with Running() as running:
        running.live_session(bot)
        fake_telegram.push(telegram_message("@acme_bot hello?", chat_id=-7, chat_type="group",
                                            entities=[{"type": "mention", "offset": 0, "length": 9}]))
        wait_until(lambda: any(m["edits"][-1:] == ["Supervised."] for m in fake_telegram.sent("-7")))
    assert Run.objects.get().surface == "telegram"


@pytest.mark.django_db(transaction=True)
def test_a_token_change_replaces_the_session_after_the_old_one_has_ended(org, builder, fake_telegram):
    bot = telegram_bot(org, builder, fake_telegram)
    with Running() as running:
        first = running.live_session(bot)
        calls = get_me_calls(fake_telegram)
        fake_telegram.token = "654321:ROTATED-telegram"  # rotated on the platform, then pasted here
        services.update_bot(actor=actor(builder, org), bot=bot, data={"token": fake_telegram.token})
        second = running.new_session(bot, first)
        assert not first.is_alive() and second.is_alive()
        assert get_me_calls(fake_telegram) > calls
        assert len(running.supervisor.workers) == 1


@pytest.mark.django_db(transaction=True)
def test_pause_resume_transport_switch_and_delete_each_close_or_reopen_the_session(org, builder, fake_telegram):
    bot = telegram_bot(org, builder, fake_telegram)
    who = actor(builder, org)
    with Running() as running:
        session = running.live_session(bot)

        services.set_paused(actor=who, bot=bot, paused=True)
        running.gone(bot, session)
        wait_until(lambda: state(bot) == "paused")

        services.set_paused(actor=who, bot=bot, paused=False)
        session = running.live_session(bot)

        bot = services.set_transport(actor=who, bot=bot, transport="webhook")
        running.gone(bot, session)
        assert state(bot) == "idle"

        bot = services.set_transport(actor=who, bot=bot, transport="polling")
        session = running.live_session(bot)

        services.delete_bot(actor=who, bot=bot)
        running.gone(bot, session)
        assert running.supervisor.workers == {}


@pytest.mark.django_db(transaction=True)
def test_a_server_url_change_moves_the_stream_to_the_new_server(org, builder, fake_mattermost):
    bot = mm_bot(org, builder, fake_mattermost)
    other = start_fake_mattermost()
    try:
        with Running() as running:
            first = running.live_session(bot)
            assert fake_mattermost.stream_opened.wait(15)
            services.update_bot(actor=actor(builder, org), bot=bot, data={"api_base_url": other.url})
            running.new_session(bot, first)
            assert other.stream_opened.wait(15)
            wait_until(lambda: other.auth_challenges == [other.token])
    finally:
        other.stop()


@pytest.mark.django_db(transaction=True)
def test_a_rejected_credential_stops_as_not_started_and_waits_for_the_row_to_change(org, builder, fake_telegram,
                                                                                    caplog):
    bot = telegram_bot(org, builder, fake_telegram, token="999999:WRONG-token-value")
    with Running() as running:
        wait_until(lambda: running.supervisor.outcomes.get(str(bot.pk)) == "not_started")
        bot.refresh_from_db()
        assert bot.connection_state == "not_started" and "rejected" in bot.connection_reason
        calls = get_me_calls(fake_telegram)
        assert calls == 1

        running.looked_again(bot)  # a change that does not touch the credential: still stopped, not retried
        assert get_me_calls(fake_telegram) == calls and running.session(bot) is None
        assert state(bot) == "not_started"

        services.update_bot(actor=actor(builder, org), bot=bot, data={"token": fake_telegram.token})
        running.live_session(bot)
        assert ChannelBot.objects.get(pk=bot.pk).connection_reason == ""
    assert "WRONG-token" not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_the_stop_event_ends_every_session_and_the_loop(org, builder, fake_telegram, fake_mattermost):
    polled = telegram_bot(org, builder, fake_telegram)
    streamed = mm_bot(org, builder, fake_mattermost)
    running = Running().__enter__()
    sessions = [running.live_session(polled), running.live_session(streamed)]
    running.stop()
    assert not any(s.is_alive() for s in sessions)
    assert running.supervisor.workers == {} and running.supervisor.retiring == {}
    wait_until(lambda: fake_mattermost.streams == [])  # the socket was closed, not abandoned
    assert {state(polled), state(streamed)} == {"connecting"}  # not "connected" while no supervisor runs


@pytest.mark.django_db(transaction=True)
def test_the_command_runs_until_sigterm_and_stops_its_sessions(org, builder, fake_telegram, capsys):
    bot = telegram_bot(org, builder, fake_telegram)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    sent = threading.Event()

    def terminate_once_connected() -> None:
        try:
            wait_until(lambda: state(bot) == "connected" and any(
                t.name.startswith("bot-") and t.is_alive() for t in threading.enumerate()), timeout=30)
        finally:
            sent.set()
            os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=terminate_once_connected)
    killer.start()
    try:
        call_command("channel_supervisor")
    finally:
        killer.join(timeout=30)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert sent.is_set()
    assert "channel supervisor: running" in capsys.readouterr().out
    bot.refresh_from_db()
    assert bot.connection_state == "connecting" and "not running" in bot.connection_reason
    assert not any(t.name.startswith("bot-") and t.is_alive() for t in threading.enumerate())
