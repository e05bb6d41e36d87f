"""Telegram: the webhook's secret token, parsing, the reply through the fake Bot API, long polling under
the supervisor's ladder, voice notes with and without a speech-to-text model."""

from __future__ import annotations

import json
import threading

import pytest

from agents.models import Run
from channelbots import services, supervisor
from channelbots.incoming import Incoming
from channelbots.models import ChannelBot, CredentialKind
from channelbots.telegram.parse import parse_incoming
from tests import factories
from tests.channelbots.conftest import actor, bind, wait_until
from tests.channelbots.test_slack_end_to_end import streaming_model
from tests.fakes.telegram_api import FakeTelegram, fake_telegram, telegram_message  # noqa: F401


def telegram_bot(org, user, fake, transport="webhook"):
    bot = services.create_bot(actor=actor(user, org), data={
        "platform": "telegram", "name": "Tg", "token": fake.token, "api_base_url": fake.url, "transport": transport})
    ChannelBot.objects.filter(pk=bot.pk).update(platform_bot_username=fake.username, platform_bot_user_id="777")
    bot.refresh_from_db()
    return bot


def secret_of(bot) -> str:
    return services.reveal_credentials(bot)[CredentialKind.WEBHOOK_SECRET]


def post_update(client, bot, update, secret):
    headers = {"HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN": secret} if secret is not None else {}
    return client.post(f"/api/v1/telegram/{bot.pk}/webhook", data=json.dumps(update),
                       content_type="application/json", **headers)


@pytest.fixture
def dispatched(monkeypatch):
    seen: list[Incoming] = []
    monkeypatch.setattr("channelbots.tasks.handle_incoming.delay",
                        lambda data, claimed: seen.append(Incoming.from_json(data)))
    return seen


@pytest.mark.django_db
def test_the_webhook_refuses_calls_without_the_minted_secret(client, org, builder, fake_telegram, dispatched):
    bot = telegram_bot(org, builder, fake_telegram)
    update = {"update_id": 1, "message": telegram_message("hi")}
    assert post_update(client, bot, update, None).status_code == 403
    assert post_update(client, bot, update, "wrong-secret").status_code == 403
    assert post_update(client, bot, update, secret_of(bot)).status_code == 200
    assert len(dispatched) == 1 and dispatched[0].chat_type == "dm"
    assert post_update(client, bot, update, secret_of(bot)).status_code == 200  # redelivery: dropped
    assert len(dispatched) == 1


@pytest.mark.django_db
def test_a_bot_without_a_webhook_secret_refuses_every_call(client, org, builder, fake_telegram, dispatched):
    bot = telegram_bot(org, builder, fake_telegram, transport="polling")
    assert post_update(client, bot, {"update_id": 1, "message": telegram_message("hi")}, "").status_code == 403


def test_parsing_takes_the_largest_photo_voice_notes_and_documents():
    message = telegram_message(
        caption="look", photo=[{"file_id": "small", "width": 90, "height": 90},
                               {"file_id": "big", "width": 1280, "height": 960}])
    incoming = parse_incoming({"update_id": 1, "message": message}, bot_id="b")
    assert incoming.text == "look" and [f.ref for f in incoming.files] == ["big"]
    voice = parse_incoming({"update_id": 2, "message": telegram_message(
        voice={"file_id": "v1", "mime_type": "audio/ogg", "file_size": 10, "duration": 2})}, bot_id="b")
    assert voice.files[0].is_voice
    doc = parse_incoming({"update_id": 3, "message": telegram_message(
        document={"file_id": "d1", "file_name": "report.pdf", "mime_type": "application/pdf"})}, bot_id="b")
    assert doc.files[0].name == "report.pdf"
    assert parse_incoming({"update_id": 4, "edited_message": telegram_message("x")}, bot_id="b") is None


def test_a_group_message_is_addressed_by_the_bot_handle_or_a_reply_to_it():
    text = "@acme_bot status?"
    named = telegram_message(text, chat_type="group", entities=[{"type": "mention", "offset": 0, "length": 9}])
    assert parse_incoming({"update_id": 1, "message": named}, bot_id="b", bot_username="acme_bot").mentioned
    other = telegram_message("hello all", chat_type="group")
    assert not parse_incoming({"update_id": 2, "message": other}, bot_id="b", bot_username="acme_bot").mentioned
    reply = telegram_message("and?", chat_type="group", reply_to_message={"message_id": 5, "from": {"id": 777}})
    assert parse_incoming({"update_id": 3, "message": reply}, bot_id="b", bot_user_id="777").mentioned


def test_a_group_mention_is_answered_through_the_bot_api_with_live_edits(celery_worker, scripted_model, client, org,
                                                                        builder, fake_telegram):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram)
    bind(agent, bot, builder, org)
    scripted_model(streaming_model("Status is fine."))
    message = telegram_message("@acme_bot status?", chat_id=-100, chat_type="group",
                               entities=[{"type": "mention", "offset": 0, "length": 9}])
    assert post_update(client, bot, {"update_id": 1, "message": message}, secret_of(bot)).status_code == 200
    sent = wait_until(lambda: next((m for m in fake_telegram.sent("-100") if m["edits"][-1:] == ["Status is fine."]),
                                   None))
    assert sent["text"] == "…"
    run = Run.objects.get()
    assert run.surface == "telegram" and run.prompt == "status?" and run.chat_account == "telegram:9"


def test_long_polling_under_the_supervisor_answers_and_stops_cleanly(celery_worker, scripted_model, org, builder,
                                                                    fake_telegram):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram, transport="polling")
    bind(agent, bot, builder, org)
    scripted_model(streaming_model("Polled."))
    fake_telegram.push(telegram_message("@acme_bot hi", chat_id=-5, chat_type="group",
                                        entities=[{"type": "mention", "offset": 0, "length": 9}]))
    stop = threading.Event()
    thread = threading.Thread(target=supervisor.run_ladder, args=(str(bot.pk), supervisor.session_opener(str(bot.pk)),
                                                                  stop))
    thread.start()
    try:
        wait_until(lambda: any(m["edits"][-1:] == ["Polled."] for m in fake_telegram.sent("-5")))
        assert ChannelBot.objects.get(pk=bot.pk).connection_state == "connected"
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert Run.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_dropped_session_backs_off_from_5_s_doubling_to_60_s(org, builder, fake_telegram, settings):
    settings.CHANNELBOTS_POLL_TIMEOUT = 0
    bot = telegram_bot(org, builder, fake_telegram, transport="polling")
    fake_telegram.fail_updates = 7
    stop = threading.Event()
    delays: list[float] = []
    states: list[str] = []

    def wait(delay: float) -> bool:
        delays.append(delay)
        return False

    def record(state: str, reason: str) -> None:
        states.append(state)
        if fake_telegram.fail_updates == 0 and state == "connected":
            stop.set()

    result = supervisor.run_ladder(str(bot.pk), supervisor.session_opener(str(bot.pk)), stop, wait=wait,
                                   record=record)
    assert result == "stopped"
    assert delays == [5, 10, 20, 40, 60, 60, 60]
    assert states.count("retrying") == 7


@pytest.mark.django_db(transaction=True)
def test_a_rejected_token_stops_the_loop_as_not_started_instead_of_spinning(org, builder, fake_telegram, caplog):
    bot = telegram_bot(org, builder, fake_telegram, transport="polling")
    services.set_credential(bot, CredentialKind.TOKEN, "999999:WRONG-token-value")
    waits: list[float] = []
    result = supervisor.run_ladder(str(bot.pk), supervisor.session_opener(str(bot.pk)), threading.Event(),
                                   wait=lambda d: waits.append(d) or False)
    assert result == "not_started" and waits == []
    bot.refresh_from_db()
    assert bot.connection_state == "not_started" and "rejected" in bot.connection_reason
    assert "not started" in caplog.text
    assert "WRONG-token" not in caplog.text


def test_a_voice_note_is_transcribed_into_the_same_turn(celery_worker, scripted_model, client, org, builder,
                                                       fake_telegram, fake_openai):
    from tests.fakes.openai_server import Reply

    factories.model_profile(org, "openai", "gpt-4o", api_key="sk-test-openai-key-0001",
                            base_url=fake_openai.base_url)
    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram)
    ChannelBot.objects.filter(pk=bot.pk).update(stt_provider="openai", stt_model="whisper-1")
    bind(agent, bot, builder, org)
    fake_telegram.files["v1"] = ("voice/file_1.oga", b"OggS fake audio bytes")
    fake_openai.queue(Reply.text("what is the weather"), route="transcriptions")
    scripted_model(streaming_model("Sunny."))
    message = telegram_message(chat_id=-7, chat_type="group", voice={"file_id": "v1", "mime_type": "audio/ogg"},
                               reply_to_message={"message_id": 1, "from": {"id": 777}})
    post_update(client, bot, {"update_id": 1, "message": message}, secret_of(bot))
    wait_until(lambda: Run.objects.filter(status="completed").exists())
    prompt = Run.objects.get().prompt
    assert "[Voice message, transcribed]" in prompt and "what is the weather" in prompt


def test_without_a_speech_model_the_bot_says_it_cannot_listen(celery_worker, client, org, builder, fake_telegram):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = telegram_bot(org, builder, fake_telegram)
    bind(agent, bot, builder, org)
    message = telegram_message(chat_id=-8, chat_type="group", voice={"file_id": "v1", "mime_type": "audio/ogg"},
                               reply_to_message={"message_id": 1, "from": {"id": 777}})
    post_update(client, bot, {"update_id": 1, "message": message}, secret_of(bot))
    sent = wait_until(lambda: next(iter(fake_telegram.sent("-8")), None))
    assert "can't listen" in sent["text"]
    assert Run.objects.count() == 0
