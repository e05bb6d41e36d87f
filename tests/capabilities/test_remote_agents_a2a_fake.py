"""A local A2A agent for the remote-agents tests: the `a2a-sdk` server (its JSON-RPC dispatcher, request handler,
in-memory task store and agent-card route) under uvicorn in a thread, on a socket bound before it starts.

The agent's answers are scripted (`FakeA2AAgent.script(...)`): a completed task with a text artifact, a direct
message, an input-required or auth-required task, a failed one, data or file parts. Without a script it answers
"remote: <text>". Every HTTP request is recorded (method, path, lower-cased headers) and every message the agent
received (`received`: its text, contextId, taskId), so tests can assert what reached the remote agent, with which
key, and that a refused registration sent nothing at all. With `key=`, a request without `Authorization: Bearer
<key>` is answered 401 before the SDK sees it.

The tests at the bottom prove the fake speaks the protocol: the SDK's own client resolves its card and gets an
answer from it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
from a2a.helpers.proto_helpers import (
    get_message_text,
    new_data_part,
    new_task_from_user_message,
    new_text_part,
    new_url_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Role
from starlette.applications import Starlette

CARD_PATH = "/.well-known/agent-card.json"


@dataclass
class Said:
    """One scripted answer. `state`: completed | message | input-required | auth-required | failed."""

    text: str = ""
    state: str = "completed"
    data: dict[str, Any] | None = None
    file_url: str | None = None
    # A completed answer streamed into one artifact in these pieces (each appended as a part of its own).
    chunks: list[str] | None = None


@dataclass
class Received:
    text: str
    context_id: str
    task_id: str
    authorization: str | None


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


class _Executor(AgentExecutor):
    def __init__(self, fake: FakeA2AAgent) -> None:
        self.fake = fake

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        text = get_message_text(context.message)
        headers = (context.call_context.state.get("headers") or {}) if context.call_context else {}
        self.fake.received.append(Received(text=text, context_id=context.context_id, task_id=context.task_id,
                                           authorization=headers.get("authorization")))
        said = self.fake.next_answer(text)
        parts = [new_text_part(said.text)] if said.text else []
        if said.data is not None:
            parts.append(new_data_part(said.data))
        if said.file_url is not None:
            parts.append(new_url_part(said.file_url, media_type="application/pdf", filename="report.pdf"))
        if said.state == "message":
            await event_queue.enqueue_event(Message(role=Role.ROLE_AGENT, message_id=f"m-{len(self.fake.received)}",
                                                    context_id=context.context_id, parts=parts))
            return
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        if said.state == "completed" and said.chunks:
            for index, chunk in enumerate(said.chunks):
                await updater.add_artifact([new_text_part(chunk)], artifact_id="answer", name="answer",
                                           append=index > 0, last_chunk=index == len(said.chunks) - 1)
            await updater.complete()
        elif said.state == "completed":
            await updater.add_artifact(parts, name="answer")
            await updater.complete()
        elif said.state == "input-required":
            await updater.requires_input(updater.new_agent_message(parts))
        elif said.state == "auth-required":
            await updater.requires_auth(updater.new_agent_message(parts))
        else:
            await updater.failed(updater.new_agent_message(parts))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


@dataclass
class FakeA2AAgent:
    name: str = "Weather Desk"
    description: str = "Answers questions about the weather."
    key: str | None = None
    # The host the card names for its endpoint (a name the test's `dns` table points at 127.0.0.1, or the address).
    endpoint_host: str = "127.0.0.1"
    # Replaces the card's interface URL outright (a hostile card).
    endpoint_url: str | None = None
    received: list[Received] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    answers: list[Said] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        card = AgentCard(
            name=self.name, description=self.description, version="1.0",
            supported_interfaces=[AgentInterface(url=self.endpoint_url or self.rpc_url, protocol_binding="JSONRPC",
                                                 protocol_version="1.0")],
            capabilities=AgentCapabilities(streaming=False, push_notifications=False),
            default_input_modes=["text/plain"], default_output_modes=["text/plain"],
            skills=[AgentSkill(id="weather", name="Weather", description="Forecasts", tags=["weather"])],
        )
        handler = DefaultRequestHandler(agent_executor=_Executor(self), task_store=InMemoryTaskStore(),
                                        agent_card=card)
        app = Starlette(routes=[*create_agent_card_routes(card, card_url=CARD_PATH),
                                *create_jsonrpc_routes(handler, rpc_url="/rpc", enable_v0_3_compat=True)])
        outer = self

        async def guarded(scope, receive, send):
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
                outer.seen.append(Seen(method=scope["method"], path=scope["path"], headers=headers))
                if outer.key and headers.get("authorization") != f"Bearer {outer.key}":
                    await send({"type": "http.response.start", "status": 401,
                                "headers": [(b"content-type", b"application/json")]})
                    await send({"type": "http.response.body", "body": b'{"error":"unauthorized"}'})
                    return
            await app(scope, receive, send)

        config = uvicorn.Config(guarded, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    @property
    def base(self) -> str:
        return f"http://{self.endpoint_host}:{self.port}"

    @property
    def card_url(self) -> str:
        return f"{self.base}{CARD_PATH}"

    @property
    def rpc_url(self) -> str:
        return f"{self.base}/rpc"

    def script(self, *answers: Said) -> None:
        self.answers.extend(answers)

    def next_answer(self, text: str) -> Said:
        return self.answers.pop(0) if self.answers else Said(text=f"remote: {text}")

    def start(self) -> FakeA2AAgent:
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.thread.is_alive():
            if self.server.started:
                return self
            time.sleep(0.02)
        raise RuntimeError("the fake A2A agent did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.socket.close()


@pytest.fixture
def fake_a2a():
    """A started fake A2A agent on 127.0.0.1 (list 127.0.0.1 in TOOL_ALLOWED_PRIVATE_HOSTS to reach it)."""
    agent = FakeA2AAgent().start()
    yield agent
    agent.stop()


# ------------------------------------------------------------------ the fake speaks A2A (the SDK's own client)


def test_the_sdk_client_reads_the_fakes_card_and_gets_its_answer(fake_a2a):
    from a2a.client import A2ACardResolver, ClientConfig, create_client
    from a2a.types.a2a_pb2 import SendMessageRequest

    fake_a2a.script(Said(text="Sunny in Lisbon."))

    async def go():
        async with httpx.AsyncClient(timeout=10) as http:
            card = await A2ACardResolver(http, fake_a2a.base).get_agent_card()
            client = await create_client(card, client_config=ClientConfig(streaming=False, httpx_client=http))
            message = Message(role=Role.ROLE_USER, message_id="m1", parts=[new_text_part("Weather in Lisbon?")])
            return card, [event async for event in client.send_message(SendMessageRequest(message=message))]

    card, events = asyncio.run(go())
    assert card.name == "Weather Desk"
    assert [i.url for i in card.supported_interfaces] == [fake_a2a.rpc_url]
    [event] = events
    assert event.HasField("task") and event.task.artifacts[0].parts[0].text == "Sunny in Lisbon."
    assert [r.text for r in fake_a2a.received] == ["Weather in Lisbon?"]


def test_a_keyed_fake_refuses_a_request_without_its_key():
    agent = FakeA2AAgent(key="a2a-partner-key-123").start()
    try:
        assert httpx.get(agent.card_url, timeout=10).status_code == 401
        answered = httpx.get(agent.card_url, headers={"Authorization": "Bearer a2a-partner-key-123"}, timeout=10)
        assert answered.status_code == 200 and answered.json()["name"] == "Weather Desk"
    finally:
        agent.stop()
