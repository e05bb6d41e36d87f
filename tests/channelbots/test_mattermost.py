"""Mattermost: the WebSocket event stream under the supervisor (mentions read from the event's list) and
the outgoing webhook (token in the body, trigger word), against a fake Mattermost."""

from __future__ import annotations

import threading

import pytest

from agents.models import Run
from channelbots import services, supervisor
from channelbots.incoming import Incoming
from channelbots.mattermost.parse import parse_event
from tests import factories
from tests.channelbots.conftest import actor, bind, wait_until
from tests.channelbots.test_slack_end_to_end import streaming_model
from tests.fakes.mattermost import fake_mattermost  # noqa: F401


def mm_bot(org, user, fake, *, transport="polling", webhook_secret=""):
    data = {"platform": "mattermost", "name": "Ops", "token": fake.token, "api_base_url": fake.url,
            "transport": transport}
    if webhook_secret:
        data["webhook_secret"] = webhook_secret
    return services.create_bot(actor=actor(user, org), data=data)


def test_the_event_stream_answers_a_mention_in_its_thread_and_ignores_the_rest(celery_worker, scripted_model, org,
                                                                              builder, fake_mattermost):
    agent = factories.published_agent(org, builder, name="Support Agent")
    bot = mm_bot(org, builder, fake_mattermost)
    bind(agent, bot, builder, org)
    scripted_model(streaming_model("On it."))
    stop = threading.Event()
    thread = threading.Thread(target=supervisor.run_ladder,
                              args=(str(bot.pk), supervisor.session_opener(str(bot.pk)), stop))
    thread.start()
    try:
        assert fake_mattermost.stream_opened.wait(15)
        wait_until(lambda: fake_mattermost.auth_challenges == [fake_mattermost.token])
        fake_mattermost.emit_posted(channel="town", user="ada", message="nothing for the bot")
        post_id = fake_mattermost.emit_posted(channel="town", user="ada", message="@opsbot restart?",
                                              mentions=["botuser"])
        answer = wait_until(lambda: next((p for p in fake_mattermost.answers("town") if p["edits"][-1:] == ["On it."]),
                                         None))
        assert answer["root_id"] == post_id
    finally:
        stop.set()
        thread.join(timeout=30)
    run = Run.objects.get()
    assert run.surface == "mattermost" and run.prompt == "restart?"


def test_a_stream_event_mentions_the_bot_only_through_the_platform_list():
    event = {"event": "posted", "data": {"channel_type": "O", "mentions": '["someone"]',
                                         "post": '{"id": "p1", "channel_id": "c", "user_id": "u", "message": "bot?"}'}}
    assert not parse_event(event, bot_id="b", bot_user_id="botuser").mentioned
    assert parse_event(event, bot_id="b", bot_user_id="").mentioned  # unknown self: answer everything
    system = {"event": "posted", "data": {"post": '{"id": "p2", "channel_id": "c", "user_id": "u", '
                                                  '"type": "system_join_channel", "message": "joined"}'}}
    assert parse_event(system, bot_id="b", bot_user_id="botuser") is None


@pytest.mark.django_db(transaction=True)
def test_a_rejected_token_leaves_the_stream_not_started(org, builder, fake_mattermost):
    bot = mm_bot(org, builder, fake_mattermost)
    services.set_credential(bot, "token", "mm-wrong-token-0000")
    result = supervisor.run_ladder(str(bot.pk), supervisor.session_opener(str(bot.pk)), threading.Event(),
                                   wait=lambda d: False)
    assert result == "not_started"
    bot.refresh_from_db()
    assert bot.connection_state == "not_started"


@pytest.fixture
def dispatched(monkeypatch):
    seen: list[Incoming] = []
    monkeypatch.setattr("channelbots.tasks.handle_incoming.delay",
                        lambda data, claimed: seen.append(Incoming.from_json(data)))
    return seen


@pytest.mark.django_db
def test_the_outgoing_webhook_checks_the_pasted_token_and_reads_the_trigger_word(client, org, builder,
                                                                              fake_mattermost, dispatched):
    bot = mm_bot(org, builder, fake_mattermost, transport="webhook", webhook_secret="tok-from-mattermost-1")
    body = {"token": "tok-from-mattermost-1", "channel_id": "town", "post_id": "p9", "user_id": "ada",
            "user_name": "ada", "text": "opsbot restart?", "trigger_word": "opsbot"}
    path = f"/api/v1/mattermost/{bot.pk}/webhook"
    assert client.post(path, {**body, "token": "wrong"}).status_code == 403
    assert client.post(path, body).status_code == 200
    assert client.post(path, body, content_type="application/json").status_code == 200  # redelivery: dropped
    assert len(dispatched) == 1 and dispatched[0].mentioned and dispatched[0].trigger_word == "opsbot"


@pytest.mark.django_db
def test_a_mattermost_bot_without_a_webhook_token_refuses_every_call(client, org, builder, fake_mattermost,
                                                                     dispatched):
    bot = mm_bot(org, builder, fake_mattermost, transport="webhook")
    response = client.post(f"/api/v1/mattermost/{bot.pk}/webhook", {"token": "", "post_id": "p", "user_id": "u"})
    assert response.status_code == 403 and dispatched == []
