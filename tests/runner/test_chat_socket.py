"""The web chat socket through the full ASGI app, with a real Celery worker executing the run."""

from __future__ import annotations

import asyncio
import json
from importlib import import_module

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as dj_settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

from agenticos.asgi import application
from agenticos.tenancy import SESSION_KEY as ORG_SESSION_KEY
from agents.models import Message, Run
from tests.runner.conftest import publish
from tests.runner.test_execute import CHART_ARGS

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT = 20


def session_cookie(user, org) -> str:
    engine = import_module(dj_settings.SESSION_ENGINE)
    session = engine.SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session[ORG_SESSION_KEY] = str(org.pk)
    session.save()
    return f"{dj_settings.SESSION_COOKIE_NAME}={session.session_key}"


async def connect(user, org):
    cookie = await database_sync_to_async(session_cookie)(user, org)
    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"cookie", cookie.encode())])
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    return communicator, connected


async def receive_until(communicator, last_types=("complete", "error")) -> list[dict]:
    frames = []
    while True:
        payload = json.loads(await communicator.receive_from(timeout=TIMEOUT))
        frames.append(payload)
        if payload["type"] in last_types:
            return frames


@pytest.fixture
def chart_model(scripted_model):
    async def stream(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            for word in ["Your", " chart", " is", " ready."]:
                yield word
            return
        yield "Drawing."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="w1")}

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


async def test_a_chat_turn_streams_frames_in_order_through_celery_and_reopens_identically(
    org, owner, chart_model, celery_worker
):
    agent, _ = await database_sync_to_async(publish)(org, owner, capabilities=[{"id": "charts"}])
    communicator, connected = await connect(owner, org)
    assert connected
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "chart please"})

    frames = await receive_until(communicator)

    types = [f["type"] for f in frames]
    assert types[:3] == ["conversation_created", "run_started", "message_saved"]
    assert types[-1] == "complete"
    assert types.index("model_request_start") < types.index("tool_call") < types.index("tool_result")
    assert frames[-1]["data"]["usage"]["input_tokens"] > 0  # members see what it cost
    assert "cost_usd" in frames[-1]["data"]["usage"]
    streamed = []
    for f in frames:
        if f["type"] == "text_delta":
            if streamed and streamed[-1]["type"] == "text":
                streamed[-1]["text"] += f["data"]["content"]
            else:
                streamed.append({"type": "text", "text": f["data"]["content"]})
        elif f["type"] == "tool_call":
            streamed.append({"type": "tool", "tool_call_id": f["data"]["tool_call_id"]})
    run_id = frames[1]["data"]["run_id"]
    answer = await database_sync_to_async(lambda: Message.objects.get(run_id=run_id, role="assistant"))()
    assert answer.parts == streamed
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_an_unauthenticated_socket_is_refused():
    communicator = WebsocketCommunicator(application, "/ws/chat/")
    connected, code = await communicator.connect(timeout=TIMEOUT)
    assert not connected and code == 4003
    await communicator.disconnect()


async def test_an_outsider_cannot_run_another_organizations_agent(org, owner, outsider, outsider_org):
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, connected = await connect(outsider, outsider_org)
    assert connected
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "hi"})
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame["type"] == "error" and frame["data"]["code"] == "not_found"
    assert await database_sync_to_async(Run.objects.count)() == 0
    await communicator.disconnect()


async def test_a_viewer_gets_an_error_frame_and_nothing_runs(org, owner, viewer):
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, _ = await connect(viewer, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "hi"})
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame["type"] == "error" and frame["data"]["code"] == "forbidden"
    assert await database_sync_to_async(Run.objects.count)() == 0
    await communicator.disconnect()


async def test_a_too_long_message_gets_an_error_frame(org, owner, settings):
    settings.MAX_MESSAGE_CHARS = 100
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, _ = await connect(owner, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "x" * 101})
    frame = await communicator.receive_json_from(timeout=TIMEOUT)
    assert frame["type"] == "error" and "too long" in frame["data"]["message"]
    await communicator.send_json_to({"type": "bogus"})
    assert (await communicator.receive_json_from(timeout=TIMEOUT))["data"]["code"] == "bad_frame"
    await communicator.disconnect()


async def test_stop_cancels_the_running_turn(org, owner, scripted_model, celery_worker):
    async def stream(messages, info):
        yield "Thinking"
        for _ in range(200):
            await asyncio.sleep(0.05)
            yield "."

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    agent, _ = await database_sync_to_async(publish)(org, owner)
    communicator, _ = await connect(owner, org)
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "go"})
    while True:
        frame = await communicator.receive_json_from(timeout=TIMEOUT)
        if frame["type"] == "text_delta":
            break
    await communicator.send_json_to({"type": "stop"})
    frames = await receive_until(communicator)
    assert frames[-1]["type"] == "error" and frames[-1]["data"]["code"] == "cancelled"
    run = await database_sync_to_async(Run.objects.get)()
    assert run.status == "cancelled"
    kept = await database_sync_to_async(lambda: Message.objects.get(run=run, role="assistant").content)()
    assert kept.startswith("Thinking")
    await communicator.disconnect()
