"""Stream safety on every socket: a private key and an API key streamed by the real OpenAI client (the fake
sends the PEM block a word per chunk, so no chunk alone looks like a key) through the web chat socket, an
embed socket and the run API, executed by a real Celery worker. Every frame any run published is recorded
(the runner's own sink, before any consumer filters it), and none ever carried the key."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents.models import Message, Run
from agents.runner.frames import ChannelLayerSink
from tests import factories
from tests.capabilities.test_guardrails_edges import SECRET, guarded
from tests.embeds.conftest import FRONTEND, SHOP, communicator, frames_until_end, next_frame
from tests.fakes.telegram_api import fake_telegram, telegram_message  # noqa: F401  (fixture)
from tests.runner.test_chat_socket import connect, receive_until
from tests.runner.test_run_api import bearer

pytestmark = pytest.mark.django_db(transaction=True)

BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
PEM = f"-----BEGIN PRIVATE KEY-----\n{BODY}\n{BODY[::-1]}\n-----END PRIVATE KEY-----"
ANSWER = f"The deploy key is\n{PEM}\nand the API key is {SECRET} for now."
FRAGMENTS = (BODY, BODY[::-1], SECRET, SECRET[:12])


@pytest.fixture
def published(monkeypatch) -> list[dict]:
    """Every frame any run's sink publishes to the channel layer, in order."""
    sent: list[dict] = []
    original = ChannelLayerSink.send

    async def spy(self, frame):
        sent.append(frame)
        await original(self, frame)

    monkeypatch.setattr(ChannelLayerSink, "send", spy)
    return sent


@pytest.fixture
def keyed_agent(org, owner, fake_openai):
    fake_openai.default_text = ANSWER  # every chat request of these runs answers with the keys
    agent, _version = guarded(org, owner, fake_openai, {"redact_secrets_out": True})
    return agent


def assert_never_carried(*texts: str) -> None:
    for text in texts:
        for fragment in FRAGMENTS:
            assert fragment not in text


def assert_clean_run(run_id, published: list[dict]) -> None:
    run = Run.objects.get(pk=run_id)
    assert run.status == "completed", run.error
    assert "[redacted:private_key]" in run.output and "[redacted:openai_key]" in run.output
    stored = json.dumps(list(Message.objects.filter(run=run).values("content", "parts")), default=str)
    assert_never_carried(run.output, stored, json.dumps(published))
    text = "".join(f["data"]["content"] for f in published if f["type"] == "text_delta")
    assert "[redacted:private_key]" in text  # the answer did stream (the control)


async def test_the_web_chat_socket_never_receives_a_streamed_key(org, owner, keyed_agent, published, celery_worker):
    comm, connected = await connect(owner, org)
    assert connected
    await comm.send_json_to({"type": "message", "agent_id": str(keyed_agent.pk), "text": "what are the keys?"})
    frames = await receive_until(comm)
    await comm.disconnect()
    assert frames[-1]["type"] == "complete"
    assert_never_carried(json.dumps(frames))
    run_id = next(f["data"]["run_id"] for f in frames if f["type"] == "run_started")
    await database_sync_to_async(assert_clean_run)(run_id, published)


@pytest.fixture
def embed_settings(settings):
    settings.FRONTEND_URL = FRONTEND
    settings.RATE_LIMIT_EMBED_PER_MINUTE = 1000
    settings.RATE_LIMIT_HOSTED_PAGE_PER_MINUTE = 1000
    settings.EMBED_SLOW_READER_SECONDS = 30


@pytest.mark.parametrize("kind", ["widget", "page"])
async def test_an_embed_socket_never_receives_a_streamed_key(org, owner, keyed_agent, published, embed_settings,
                                                          celery_worker, kind):
    widget = await database_sync_to_async(factories.embed)(
        keyed_agent, kind=kind, created_by=owner, **({"allowed_origins": [SHOP]} if kind == "widget" else {}))
    comm = communicator(widget.public_key, origin=FRONTEND if kind == "page" else SHOP)
    connected, _ = await comm.connect(timeout=5)
    assert connected and (await next_frame(comm))["type"] == "ready"
    if kind == "page":  # the hosted page's socket: its history comes first
        assert (await next_frame(comm))["type"] == "history"
    await comm.send_json_to({"type": "message", "text": "what are the keys?"})
    frames = await frames_until_end(comm, timeout=30)
    await comm.disconnect()
    assert frames[-1]["type"] == "complete"
    assert_never_carried(json.dumps(frames))
    run_id = await database_sync_to_async(
        lambda: Run.objects.filter(embed_id=widget.pk).values_list("pk", flat=True).get())()
    await database_sync_to_async(assert_clean_run)(run_id, published)


def test_the_run_api_never_answers_with_a_streamed_key(org, owner, keyed_agent, published, celery_worker):
    response = bearer(owner, org).post(f"/api/v1/agents/{keyed_agent.pk}/run", {"prompt": "keys?"}, format="json")
    assert response.status_code == 200, response.content
    assert_never_carried(response.content.decode())
    assert_clean_run(response.json()["run_id"], published)


def test_a_channel_bots_live_edits_never_carry_a_streamed_key(org, owner, keyed_agent, published, client, settings,
                                                              tmp_path, fake_telegram, celery_worker):  # noqa: F811
    """Telegram: the reply is posted and edited as the text arrives (channelbots/delivery.py reads the run's
    frames); every call the fake Telegram API received is checked."""
    settings.ROOT_URLCONF = "tests.channelbots.urls"  # the channel settings of tests/channelbots/conftest.py
    settings.FRONTEND_URL = "https://app.example.com"
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.CHANNEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the fake platform listens there
    from tests.channelbots.conftest import bind, wait_until
    from tests.channelbots.test_telegram import post_update, secret_of, telegram_bot

    bot = telegram_bot(org, owner, fake_telegram)
    bind(keyed_agent, bot, owner, org)
    message = telegram_message("what are the keys?", chat_id=-7, chat_type="group",
                               reply_to_message={"message_id": 1, "from": {"id": 777}})
    post_update(client, bot, {"update_id": 1, "message": message}, secret_of(bot))
    run = wait_until(lambda: Run.objects.filter(status="completed").first(), timeout=30)
    wait_until(lambda: any("[redacted:openai_key]" in json.dumps(params) for _name, params in fake_telegram.calls),
               timeout=30)
    assert_never_carried(json.dumps(fake_telegram.calls, default=str))
    assert_clean_run(run.pk, published)
