"""The voice call socket through the full ASGI app against a local fake of OpenAI's Realtime API."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agents.models import Conversation, Message, ModelProfile
from config.asgi import application
from governance.models import SpendEntry
from tests import factories
from tests.fakes.realtime_server import KEY, Reply, realtime_server  # noqa: F401  (fixture)
from tests.runner.test_chat_socket import session_cookie

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT = 20
CHUNK = base64.b64encode(b"\x00\x01" * 2400).decode()  # 4800 bytes: one utterance at the fake's VAD


@pytest.fixture
def fake(realtime_server, settings):  # noqa: F811
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    realtime_server.reset()
    return realtime_server


def realtime_profile(org, fake, **extra):
    return factories.model_profile(org, "openai", "gpt-realtime", label="Voice", api_key=KEY, base_url=fake.base_url,
                                   kind=ModelProfile.Kind.REALTIME, **extra)


async def dial(user, org, agent_id, conversation_id=None):
    cookie = await database_sync_to_async(session_cookie)(user, org)
    path = f"/ws/call/?agent={agent_id}" + (f"&conversation={conversation_id}" if conversation_id else "")
    communicator = WebsocketCommunicator(application, path, headers=[(b"cookie", cookie.encode())])
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    return communicator


async def frames_until(communicator, last: str, *, count: int = 1) -> list[dict]:
    frames: list[dict] = []
    seen = 0
    while True:
        payload = json.loads(await communicator.receive_from(timeout=TIMEOUT))
        frames.append(payload)
        if payload["type"] == last:
            seen += 1
            if seen == count:
                return frames


async def refused(communicator) -> dict:
    error = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    closed = await communicator.receive_output(timeout=TIMEOUT)
    assert closed["type"] == "websocket.close" and closed["code"] == 4003
    await communicator.disconnect()
    return error


async def test_a_call_relays_audio_stores_both_transcripts_and_records_its_audio_spend(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner, name="Concierge")
    await database_sync_to_async(realtime_profile)(org, fake)
    fake.heard.append("What time do you open?")
    fake.replies.append(Reply.say("We open at nine."))

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    assert started["type"] == "call_started" and started["data"]["created_conversation"] is True
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "usage")
    await communicator.send_json_to({"type": "hang_up"})
    ended = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.disconnect()

    assert ended == {"type": "call_ended", "data": {"reason": "hung_up"}}
    types = [f["type"] for f in frames]
    assert types.index("speech_started") < types.index("turn") < types.index("audio") < types.index("usage")
    captions = "".join(f["data"]["delta"] for f in frames if f["type"] == "caption")
    assert captions.strip() == "We open at nine."
    turns = [(f["data"]["role"], f["data"]["text"]) for f in frames if f["type"] == "turn"]
    assert turns == [("user", "What time do you open?"), ("assistant", "We open at nine.")]
    # The session was fixed at connect: the agent's own instructions, the call's tools, input transcription.
    session = fake.sessions[0]
    assert session["instructions"].startswith("You are a helpful test agent.")
    assert session["tools"] == [] and session["input_audio_transcription"] == {"model": "whisper-1"}
    assert fake.headers[0]["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(frames + [started])

    conversation_id = started["data"]["conversation_id"]
    stored = await database_sync_to_async(lambda: list(Message.objects.filter(
        conversation_id=conversation_id).order_by("id").values_list("role", "content", "author_id", "parent_id",
                                                                       "id")))()
    assert [(r, c) for r, c, *_ in stored] == turns
    assert stored[0][2] == owner.pk and stored[1][3] == stored[0][4]  # the agent's turn answers the person's
    entry = await database_sync_to_async(SpendEntry.objects.get)(organization=org, kind="voice_call")
    assert entry.agent_id == agent.pk and entry.model == "gpt-realtime" and not entry.is_partial
    assert entry.cost_usd > 0 and entry.input_tokens == 120
    assert Decimal(frames[-1]["data"]["cost_usd"]) == entry.cost_usd


async def test_a_used_up_budget_refuses_the_call_before_the_provider_is_called(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner)
    await database_sync_to_async(realtime_profile)(org, fake)
    org.monthly_budget_usd = Decimal("0")
    await database_sync_to_async(org.save)()

    error = await refused(await dial(owner, org, agent.pk))

    assert error["type"] == "error" and error["data"]["code"] == "budget_exceeded"
    assert fake.connections == 0
    assert not await database_sync_to_async(Conversation.objects.filter(organization=org).exists)()


async def test_a_call_that_uses_up_the_budget_is_ended_after_the_response_that_did(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner)
    await database_sync_to_async(realtime_profile)(org, fake)
    org.monthly_budget_usd = Decimal("0.0001")
    await database_sync_to_async(org.save)()
    fake.replies.append(Reply.say("A long answer that costs more than the whole budget of this organization."))

    communicator = await dial(owner, org, agent.pk)
    await communicator.receive_from(timeout=TIMEOUT)
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "call_ended")
    await communicator.disconnect()

    assert frames[-1]["data"]["reason"] == "budget_exceeded"
    assert [f["data"]["code"] for f in frames if f["type"] == "error"] == ["budget_exceeded"]
    assert await database_sync_to_async(SpendEntry.objects.filter(organization=org, kind="voice_call").count)() == 1


async def test_an_outsider_a_viewer_and_another_members_conversation_are_refused(
        org, owner, member, viewer, outsider, outsider_org, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner)
    await database_sync_to_async(realtime_profile)(org, fake)
    theirs = await database_sync_to_async(Conversation.objects.create)(organization=org, agent=agent, owner=owner)

    outsider_error = await refused(await dial(outsider, outsider_org, agent.pk))
    viewer_error = await refused(await dial(viewer, org, agent.pk))
    member_error = await refused(await dial(member, org, agent.pk, theirs.pk))

    assert outsider_error["data"]["code"] == "not_found"
    assert viewer_error["data"]["code"] in {"forbidden", "permission_denied"}
    assert member_error["data"]["code"] == "not_found"
    assert fake.connections == 0
    assert not await database_sync_to_async(Message.objects.filter(conversation__organization=org).exists)()
    assert await database_sync_to_async(Conversation.objects.count)() == 1


async def test_an_anonymous_socket_is_closed_unaccepted(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner)
    communicator = WebsocketCommunicator(application, f"/ws/call/?agent={agent.pk}")
    connected, code = await communicator.connect(timeout=TIMEOUT)
    # Ended as every other test here ends its socket: a refused instance left running kept its channel-layer
    # receive open, and cancelling that at the loop's teardown now and then waited out the layer's own timers.
    await communicator.disconnect()
    assert not connected and code == 4003
    assert fake.connections == 0


async def test_without_a_realtime_profile_the_call_says_what_an_admin_adds(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner)
    # A chat profile of the same provider is not a voice model.
    await database_sync_to_async(factories.model_profile)(org, "openai", "gpt-4o", api_key=KEY,
                                                          base_url=fake.base_url)
    error = await refused(await dial(owner, org, agent.pk))
    assert error["data"]["code"] == "no_realtime_model" and "Realtime voice" in error["data"]["message"]
    assert fake.connections == 0


async def test_a_refused_key_ends_the_call_without_the_providers_text(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner)
    await database_sync_to_async(factories.model_profile)(
        org, "openai", "gpt-realtime", api_key="sk-wrong", base_url=fake.base_url, kind=ModelProfile.Kind.REALTIME)
    error = await refused(await dial(owner, org, agent.pk))
    assert error["data"]["code"] == "provider_unavailable"
    assert "Incorrect API key" not in json.dumps(error) and "sk-wrong" not in json.dumps(error)
    assert not await database_sync_to_async(Conversation.objects.filter(organization=org).exists)()


async def test_a_blocked_term_in_what_the_person_said_ends_the_call_and_is_not_stored(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner, capabilities=[
        {"id": "guardrails", "config": {"blocked_keywords_in": "project nightingale", "redact_pii_out": True}}])
    await database_sync_to_async(realtime_profile)(org, fake)
    fake.heard.append("Tell me about Project Nightingale")
    fake.replies.append(Reply.say("Sure."))

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "call_ended")
    await communicator.disconnect()

    assert frames[-1]["data"]["reason"] == "guardrail_blocked"
    assert "Nightingale" not in json.dumps(frames)
    assert not await database_sync_to_async(Message.objects.filter(
        conversation_id=started["data"]["conversation_id"]).exists)()


async def test_the_agents_answer_is_redacted_before_it_is_stored(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner, capabilities=[
        {"id": "guardrails", "config": {"redact_pii_out": True}}])
    await database_sync_to_async(realtime_profile)(org, fake)
    fake.replies.append(Reply.say("Write to alice@example.com today."))

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "turn", count=2)
    await communicator.disconnect()

    said = frames[-1]["data"]["text"]
    assert "alice@example.com" not in said and "[redacted" in said
    stored = await database_sync_to_async(lambda: Message.objects.get(
        conversation_id=started["data"]["conversation_id"], role="assistant").content)()
    assert stored == said


async def test_ask_user_is_a_card_whose_answer_goes_back_to_the_call(org, owner, fake):
    agent = await database_sync_to_async(factories.published_agent)(org, owner, capabilities=[{"id": "ask_user"}])
    await database_sync_to_async(realtime_profile)(org, fake)
    fake.replies.extend([Reply.call("ask_user_question", question="Which day?", options=["Monday", "Tuesday"]),
                         Reply.say("Tuesday it is.")])

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "ask_user")
    card = frames[-1]["data"]
    await communicator.send_json_to({"type": "answer", "call_id": "not-open", "answer": "Monday"})
    wrong = (await frames_until(communicator, "error"))[-1]
    await communicator.send_json_to({"type": "answer", "call_id": card["call_id"], "answer": "Tuesday"})
    after = await frames_until(communicator, "turn")
    await communicator.disconnect()

    assert "ask_user_question" in started["data"]["tools"]
    assert card["question"] == "Which day?" and card["options"] == ["Monday", "Tuesday"]
    assert wrong["data"]["code"] == "not_found"
    outputs = [e["item"] for e in fake.received
               if e["type"] == "conversation.item.create" and e["item"]["type"] == "function_call_output"]
    assert outputs == [{"type": "function_call_output", "call_id": card["call_id"],
                        "output": json.dumps({"answer": "Tuesday"})}]
    assert after[-1]["data"]["text"] == "Tuesday it is."


async def test_pass_work_runs_the_text_model_while_the_call_talks_and_the_call_tells_its_result(
        org, owner, fake, celery_worker):
    agent = await database_sync_to_async(factories.published_agent)(org, owner, capabilities=[{"id": "subagents"}])
    await database_sync_to_async(realtime_profile)(org, fake)
    fake.heard.append("Please look into last quarter's numbers.")
    fake.replies.extend([Reply.call("pass_work", task="Summarise last quarter's numbers"),
                         Reply.say("I have started on that; anything else meanwhile?"),
                         Reply.say("The summary is ready.")])

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "task_done")
    # The call's "I have started…" and the task's end race (a quick hand-off ends before the call has spoken):
    # read turns until the one that tells the result.
    while not any(f["type"] == "turn" and f["data"].get("text") == "The summary is ready." for f in frames):
        frames += await frames_until(communicator, "turn")
    await communicator.disconnect()

    assert "subagents" in started["data"]["hand_off"] and started["data"]["tools"] == ["pass_work"]
    assert "pass_work" in fake.sessions[0]["instructions"]
    task = next(f["data"] for f in frames if f["type"] == "task_started")
    done = next(f["data"] for f in frames if f["type"] == "task_done")
    assert done["run_id"] == task["run_id"] and done["status"] == "completed" and done["output"]
    # The call answered the function at once (it kept talking), then was told the result as a message.
    types = [f["type"] for f in frames]
    assert types.index("task_started") < types.index("task_done")
    said = [e["item"] for e in fake.received if e["type"] == "conversation.item.create"]
    assert said[0]["type"] == "function_call_output" and json.loads(said[0]["output"])["status"] == "started"
    assert said[1]["type"] == "message" and done["output"][:40] in said[1]["content"][0]["text"]
    assert frames[-1]["data"]["text"] == "The summary is ready."
    # The hand-off is a run of the agent in the call's conversation: the task as the person's turn, its answer.
    run_messages = await database_sync_to_async(lambda: list(Message.objects.filter(
        run_id=task["run_id"]).order_by("id").values_list("role", "content")))()
    assert run_messages[0] == ("user", "Summarise last quarter's numbers") and run_messages[-1][0] == "assistant"
    conversation = await database_sync_to_async(lambda: Message.objects.filter(
        run_id=task["run_id"]).values_list("conversation_id", flat=True).first())()
    assert str(conversation) == started["data"]["conversation_id"]
