"""Every published agent is an A2A server (interop/a2a.py), driven through daphne with the real `a2a-sdk`
client: its card, `message/send` and `message/stream`, `tasks/get`, a context that continues its
conversation, A2A 0.3's method names on the wire, and who may reach it."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.types.a2a_pb2 import GetTaskRequest, Role, SendMessageRequest, TaskState
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from agenticos.models import Membership
from agents.models import Conversation, Run, RunStatus
from tests.interop.conftest import api_key
from tests.runner.conftest import publish

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def echo_model(scripted_model):
    """Answers with the last prompt and how many user prompts the request carried (the history)."""

    async def stream(messages, info):
        prompts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)]
        yield "echo: "
        yield f"{prompts[-1].content} ({len(prompts)} prompts)"

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _client(base: str, slug: str, key: str, *, streaming: bool, http: httpx.AsyncClient):
    return await create_client(f"{base}/a2a/{slug}", client_config=ClientConfig(streaming=streaming, httpx_client=http),
                               resolver_http_kwargs={"headers": _headers(key)})


async def _send(base: str, slug: str, key: str, text: str, *, streaming: bool = False, context_id: str = ""):
    """Send one message; returns (the task as it ended, the artifact chunks streamed, the events)."""
    async with httpx.AsyncClient(headers=_headers(key), timeout=60) as http:
        client = await _client(base, slug, key, streaming=streaming, http=http)
        message = new_text_message(text, role=Role.ROLE_USER, context_id=context_id or None)
        message.message_id = uuid.uuid4().hex
        events, chunks, task = [], [], None
        async for event in client.send_message(SendMessageRequest(message=message)):
            events.append(event)
            if event.HasField("task"):
                task = event.task
            if event.HasField("artifact_update"):
                chunks.append("".join(p.text for p in event.artifact_update.artifact.parts))
            if event.HasField("status_update"):
                task_id = event.status_update.task_id
                task = await client.get_task(GetTaskRequest(id=task_id)) if event.status_update.status.state in (
                    TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                    TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_CANCELED) else task
        await client.close()
        return task, chunks, events


def _answer(task) -> str:
    return get_message_text(task.status.message)


def test_the_card_names_the_agent_and_needs_a_key_of_its_organization(
    live_server_url, org, owner, member, outsider, outsider_org
):
    publish(org, owner, name="Shop Helper", description="Answers questions about the shop.")
    publish(org, owner, name="Private", visibility="private")

    async def card(slug: str, key: str):
        async with httpx.AsyncClient(timeout=30) as http:
            return await A2ACardResolver(http, f"{live_server_url}/a2a/{slug}").get_agent_card(
                http_kwargs={"headers": _headers(key)})

    found = asyncio.run(card("shop-helper", api_key(member, org)))
    assert found.name == "Shop Helper" and found.description == "Answers questions about the shop."
    assert found.capabilities.streaming
    assert {i.url for i in found.supported_interfaces} == {f"{live_server_url}/a2a/shop-helper"}
    assert "bearer" in found.security_schemes

    card_url = f"{live_server_url}/a2a/shop-helper/.well-known/agent-card.json"
    assert httpx.get(card_url, timeout=30).status_code == 401
    assert httpx.get(card_url, headers=_headers("aos_wrong"), timeout=30).status_code == 401
    # Another organization's key, and a private agent the member cannot see: the same 404 as a missing one.
    assert httpx.get(card_url, headers=_headers(api_key(outsider, outsider_org)), timeout=30).status_code == 404
    private = f"{live_server_url}/a2a/private/.well-known/agent-card.json"
    assert httpx.get(private, headers=_headers(api_key(member, org)), timeout=30).status_code == 404
    missing = f"{live_server_url}/a2a/nobody/.well-known/agent-card.json"
    assert httpx.get(missing, headers=_headers(api_key(member, org)), timeout=30).status_code == 404
    # A key whose person is now a viewer holds no run right: no agent of the organization is theirs to call.
    key = api_key(member, org)
    Membership.objects.filter(user=member, organization=org).update(role="viewer")
    assert httpx.get(card_url, headers=_headers(key), timeout=30).status_code == 404


def test_message_send_runs_the_agent_and_the_task_holds_its_answer_and_run(
    live_server_url, org, owner, echo_model, celery_worker
):
    publish(org, owner, name="Shop Helper")
    task, _, _ = asyncio.run(_send(live_server_url, "shop-helper", api_key(owner, org), "do you ship?"))
    run = Run.objects.get()
    assert run.surface == "api" and run.status == RunStatus.COMPLETED and run.user_id == owner.pk
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert _answer(task) == "echo: do you ship? (1 prompts)" == run.output
    assert task.status.message.metadata["run_id"] == str(run.pk)


def test_message_stream_sends_the_answer_as_it_is_written(live_server_url, org, owner, echo_model, celery_worker):
    publish(org, owner, name="Shop Helper")
    task, chunks, events = asyncio.run(_send(live_server_url, "shop-helper", api_key(owner, org), "hello",
                                             streaming=True))
    assert "".join(chunks) == "echo: hello (1 prompts)"
    assert len(chunks) >= 2  # streamed in pieces, not one answer at the end
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert any(e.HasField("status_update") and e.status_update.status.state == TaskState.TASK_STATE_WORKING
               for e in events)


def test_a_context_is_one_conversation_that_the_next_message_continues(
    live_server_url, org, owner, echo_model, celery_worker
):
    publish(org, owner, name="Shop Helper")
    key = api_key(owner, org)
    first, _, _ = asyncio.run(_send(live_server_url, "shop-helper", key, "my name is Ada"))
    second, _, _ = asyncio.run(_send(live_server_url, "shop-helper", key, "what is my name?",
                                     context_id=first.context_id))
    assert _answer(second) == "echo: what is my name? (2 prompts)"  # the first turn came back as history
    conversation = Conversation.objects.get()
    assert set(Run.objects.values_list("conversation_id", flat=True)) == {conversation.pk}
    assert conversation.owner_id == owner.pk
    other, _, _ = asyncio.run(_send(live_server_url, "shop-helper", key, "hello again"))
    assert other.context_id != first.context_id and Conversation.objects.count() == 2


def test_tasks_are_their_callers_own(live_server_url, org, owner, member, echo_model, celery_worker):
    publish(org, owner, name="Shop Helper")
    task, _, _ = asyncio.run(_send(live_server_url, "shop-helper", api_key(owner, org), "hello"))

    def get(key: str) -> dict:
        return httpx.post(f"{live_server_url}/a2a/shop-helper", headers=_headers(key), timeout=30, json={
            "jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"id": task.id}}).json()

    mine = get(api_key(owner, org))
    assert mine["result"]["id"] == task.id and mine["result"]["status"]["state"] == "completed"
    theirs = get(api_key(member, org))  # the same organization, another person: not found
    assert "result" not in theirs and theirs["error"]["code"] == -32001


def test_a2a_0_3_method_names_on_the_wire(live_server_url, org, owner, echo_model, celery_worker):
    publish(org, owner, name="Shop Helper")
    response = httpx.post(f"{live_server_url}/a2a/shop-helper", headers=_headers(api_key(owner, org)), timeout=60,
                          json={"jsonrpc": "2.0", "id": "1", "method": "message/send", "params": {"message": {
                              "kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
                              "parts": [{"kind": "text", "text": "are you open?"}]}}})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["kind"] == "task" and result["status"]["state"] == "completed"
    assert result["status"]["message"]["parts"][0]["text"] == "echo: are you open? (1 prompts)"


def test_an_outsider_key_cannot_send_to_our_agent(live_server_url, org, owner, outsider, outsider_org, echo_model):
    publish(org, owner, name="Shop Helper")
    response = httpx.post(f"{live_server_url}/a2a/shop-helper", headers=_headers(api_key(outsider, outsider_org)),
                          timeout=30, json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
                              "message": {"kind": "message", "messageId": "m1", "role": "user",
                                          "parts": [{"kind": "text", "text": "hi"}]}}})
    assert response.status_code == 404 and not Run.objects.exists()
    anonymous = httpx.post(f"{live_server_url}/a2a/shop-helper", timeout=30, json={"jsonrpc": "2.0", "id": 1,
                                                                                   "method": "tasks/get"})
    assert anonymous.status_code == 401 and "Bearer" in anonymous.headers["WWW-Authenticate"]


def test_a_parked_run_ends_the_task_input_required_with_its_run_id(
    live_server_url, org, owner, scripted_model, celery_worker
):
    from pydantic_ai.models.function import DeltaToolCall

    from governance.models import Approval
    from tests.runner.test_execute import CHART_ARGS

    async def stream(messages, info):
        yield "Drawing."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="c1")}

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    publish(org, owner, name="Charts", capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])
    task, _, _ = asyncio.run(_send(live_server_url, "charts", api_key(owner, org), "draw it"))
    run = Run.objects.get()
    assert run.status == RunStatus.AWAITING_APPROVAL and Approval.objects.filter(run=run).exists()
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "waiting for an approval" in _answer(task) and str(run.pk) in _answer(task)


def test_tasks_cancel_stops_the_tasks_run(live_server_url, org, owner, scripted_model, celery_worker):
    """A parked task cancelled by its caller: the run is cancelled with it (the same stop as the console's)."""
    from pydantic_ai.models.function import DeltaToolCall

    from tests.runner.test_execute import CHART_ARGS

    async def stream(messages, info):
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="c1")}

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    publish(org, owner, name="Charts", capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])
    key = api_key(owner, org)
    task, _, _ = asyncio.run(_send(live_server_url, "charts", key, "draw it"))
    assert Run.objects.get().status == RunStatus.AWAITING_APPROVAL
    response = httpx.post(f"{live_server_url}/a2a/charts", headers=_headers(key), timeout=30, json={
        "jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": task.id}}).json()
    assert response["result"]["status"]["state"] == "canceled", response
    assert Run.objects.get().status == RunStatus.CANCELLED


def test_a_body_past_the_upload_limit_is_refused_before_it_is_read(live_server_url, org, owner, settings):
    """The limit every /api/ body has holds here too (this app stands in front of Django's middleware)."""
    publish(org, owner, name="Shop Helper")
    text = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    response = httpx.post(f"{live_server_url}/a2a/shop-helper", headers=_headers(api_key(owner, org)), timeout=60,
                          json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
                              "kind": "message", "messageId": "m1", "role": "user",
                              "parts": [{"kind": "text", "text": text}]}}})
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    assert not Run.objects.exists()


def test_every_request_closes_the_sdks_handler_once_it_is_answered(org, owner, monkeypatch):
    """The SDK's handler lives for one request; its tasks' loops, left to the garbage collector, were closed in
    whichever thread collected them and hung a later request there (a /v1/models call never answered)."""
    from interop import a2a

    publish(org, owner, name="Shop Helper")
    key = api_key(owner, org)
    closed = []
    original = a2a.RunRequestHandler.aclose

    async def aclose(self):
        closed.append(self)
        await original(self)

    monkeypatch.setattr(a2a.RunRequestHandler, "aclose", aclose)

    async def ask():
        transport = httpx.ASGITransport(app=a2a.application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=_headers(key)) as http:
            return await http.post("/a2a/shop-helper", json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                                                              "params": {"id": uuid.uuid4().hex}})

    response = asyncio.run(ask())
    assert response.status_code == 200 and "error" in response.json(), response.text
    assert len(closed) == 1
