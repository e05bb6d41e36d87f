"""Every published agent is an A2A server: `/a2a/<agent>/.well-known/agent-card.json` and the JSON-RPC
endpoint `/a2a/<agent>` (`message/send`, `message/stream` over SSE, `tasks/get`, `tasks/cancel` — A2A 0.3's
method names, and 1.0's on the same endpoint).

The protocol is the `a2a-sdk` server's (its JSON-RPC dispatcher, request handler and task lifecycle); what is
ours is what an A2A call runs and who may make it:

- the caller is a platform API key (`Authorization: Bearer`, its organization or the `X-Organization-Id`
  it names), as on `/v1/chat/completions` and `/mcp`; the card and the endpoint answer 401 without one and
  404 for an agent of another organization or one the key may not run (the same 404 as a missing one). The
  key is held to its scope by the platform's one check for the request's method: a read key fetches the card,
  and every JSON-RPC call (a POST) is refused to it with 403 `insufficient_scope`;
- each `message/send` is one turn through the members' one admission (agents.chat.start_member_run,
  surface `api`): the run right, the agent at USE, the per-key rate limit, budgets, approvals, guardrails and
  the ledger as on every surface. An A2A `contextId` is one of the caller's conversations: its first message
  opens it, the next ones continue its transcript;
- a run that parks for an approval or a person's answer ends the task `input-required` with a message that
  says so and names the run; `tasks/cancel` stops the run;
- tasks live in Redis (`RedisTaskStore`), scoped to the caller's organization and user, so `tasks/get` works
  from any web process and never shows one caller's task to another.

Mounted in front of Django by config/asgi.py (the SDK's routes are Starlette's, and `message/stream`
must stream: Django's view layer would buffer it).
"""

from __future__ import annotations

import uuid
from typing import Any

import redis.asyncio as aioredis
from a2a.helpers.proto_helpers import get_message_text, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    ListTasksRequest,
    ListTasksResponse,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
)
from asgiref.sync import sync_to_async
from django.conf import settings
from starlette.applications import Starlette
from starlette.background import BackgroundTasks
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agenticos.errors import DomainError
from agenticos.tenancy import Actor
from agents.models import Run, RunStatus
from interop import service
from interop.errors import ApiError, from_domain
from interop.frames import RunFrames
from interop.openai_views import PARKED, ended_error, parked_text

CARD_PATH = "/.well-known/agent-card.json"
TASK_TTL_SECONDS = 7 * 24 * 3600  # a task can be read back for a week
CONTEXT_TTL_SECONDS = 30 * 24 * 3600  # a contextId keeps pointing at its conversation for a month
ANSWER_ARTIFACT = "answer"


# ------------------------------------------------------------------ who is calling, and which agent


class Refused(Exception):
    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code

    def response(self) -> JSONResponse:
        headers = {"WWW-Authenticate": 'Bearer realm="a2a"'} if self.status == 401 else None
        return JSONResponse({"error": {"code": self.code, "message": self.message}}, status_code=self.status,
                            headers=headers)


def _agent_for(actor: Actor, ref: str) -> tuple[Any, str, dict]:
    """(agent, environment, published spec) of an agent the actor may run; another organization's, a hidden
    one and a missing one are the same 404."""
    agent_id, environment = service.agent_id_for(actor, ref)
    for agent, environments in service.runnable_agents(actor):
        if agent.pk == agent_id and environment in environments:
            spec = agent.environments.filter(name=environment).values_list("version__spec", flat=True).first()
            return agent, environment, spec or {}
    raise service.model_not_found(ref)


async def caller(request: Request) -> tuple[Actor, Any, str, dict]:
    try:
        # The request's own method: a JSON-RPC POST (message/send, tasks/…) is a write, held to the key's scope
        # as /v1 and /mcp hold it; the card's GET is a read.
        actor = await sync_to_async(service.key_actor)(
            method=request.method, authorization=request.headers.get("authorization", ""),
            organization=request.headers.get("x-organization-id"))
        agent, environment, spec = await sync_to_async(_agent_for)(actor, request.path_params["agent"])
    except (ApiError, DomainError) as exc:
        error = from_domain(exc)
        raise Refused(error.status, error.message, error.code or "refused") from None
    return actor, agent, environment, spec


def owner_of(actor: Actor) -> str:
    return f"{actor.organization.pk}:{actor.user_id}"


# ------------------------------------------------------------------ the card


def card_for(request: Request, agent: Any, environment: str, spec: dict) -> AgentCard:
    ref = request.path_params["agent"]
    url = str(request.base_url).rstrip("/") + f"/a2a/{ref}"
    description = spec.get("description") or f"{agent.name}, an AgenticOS agent."
    return AgentCard(
        name=agent.name,
        description=description,
        version=str(environment),
        # 1.0 here; the SDK adds 0.3's `url` / `protocolVersion` fields for older clients, and the endpoint
        # answers 0.3's method names too.
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=agent.slug, name=agent.name, description=description, tags=["agenticos"])],
        security_schemes={"bearer": SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", description="An AgenticOS API key with the run right on this agent."))},
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList(list=[])})],
    )


async def agent_card(request: Request) -> Response:
    try:
        _, agent, environment, spec = await caller(request)
    except Refused as refused:
        return refused.response()
    return JSONResponse(agent_card_to_dict(card_for(request, agent, environment, spec)))


# ------------------------------------------------------------------ state in Redis


def _redis() -> aioredis.Redis:
    return aioredis.Redis.from_url(settings.REDIS_URL)


def _key(*parts: str) -> str:
    return ":".join((settings.REDIS_NAMESPACE, "a2a", *parts))


class RedisTaskStore(TaskStore):
    """The SDK's task store interface over Redis: every web process sees the same tasks, each under its
    owner (organization and user), so one caller's `tasks/get` never finds another's task."""

    @staticmethod
    def _owner(context: ServerCallContext) -> str:
        return str(context.state["owner"])

    async def save(self, task: Task, context: ServerCallContext) -> None:
        async with _redis() as client:
            await client.set(_key("task", self._owner(context), task.id), task.SerializeToString(),
                             ex=TASK_TTL_SECONDS)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        async with _redis() as client:
            raw = await client.get(_key("task", self._owner(context), task_id))
        if raw is None:
            return None
        task = Task()
        task.ParseFromString(raw)
        return task

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        tasks: list[Task] = []
        limit = params.page_size or 50
        async with _redis() as client:
            async for key in client.scan_iter(match=_key("task", self._owner(context), "*"), count=200):
                raw = await client.get(key)
                if raw is None:
                    continue
                task = Task()
                task.ParseFromString(raw)
                if params.context_id and task.context_id != params.context_id:
                    continue
                tasks.append(task)
                if len(tasks) >= limit:
                    break
        return ListTasksResponse(tasks=tasks, page_size=limit, total_size=len(tasks))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        async with _redis() as client:
            await client.delete(_key("task", self._owner(context), task_id))


TASKS = RedisTaskStore()


async def _recall(owner: str, name: str, key: str) -> str | None:
    async with _redis() as client:
        raw = await client.get(_key(name, owner, key))
    return raw.decode() if isinstance(raw, bytes) else raw


async def _remember(owner: str, name: str, key: str, value: str, ttl: int) -> None:
    async with _redis() as client:
        await client.set(_key(name, owner, key), value, ex=ttl)



# ------------------------------------------------------------------ the executor: one A2A message, one run


class RunExecutor(AgentExecutor):
    def __init__(self, actor: Actor, agent: Any, environment: str) -> None:
        self.actor, self.agent, self.environment = actor, agent, environment
        self.owner = owner_of(actor)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        text = get_message_text(context.message).strip()
        if not text:
            await updater.reject(updater.new_agent_message(_text_parts("Send the agent a text message.")))
            return
        await updater.start_work()
        run_id = uuid.uuid4()
        await _remember(self.owner, "run", context.task_id, str(run_id), TASK_TTL_SECONDS)
        conversation_id = await _recall(self.owner, "context", context.context_id)
        frames = RunFrames(run_id)
        try:
            run = await frames.start(lambda: self._start(text, conversation_id, run_id))
        except (ApiError, DomainError) as exc:
            await updater.failed(updater.new_agent_message(_text_parts(from_domain(exc).message)))
            return
        if run.conversation_id and not conversation_id:
            await _remember(self.owner, "context", context.context_id, str(run.conversation_id),
                            CONTEXT_TTL_SECONDS)
        streamed = False
        try:
            async for item in frames.iterate():
                data = item.get("data") or {}
                if item.get("type") == "text_delta" and data.get("content"):
                    await updater.add_artifact(_text_parts(data["content"]), artifact_id=ANSWER_ARTIFACT,
                                               name="answer", append=streamed, last_chunk=False)
                    streamed = True
        finally:
            await frames.close()
        await self._end(updater, await Run.objects.aget(pk=run_id))

    def _start(self, text: str, conversation_id: str | None, run_id: uuid.UUID) -> Run:
        from agents.chat import start_member_run

        run, _ = start_member_run(actor=self.actor, agent_id=self.agent.pk, text=text, surface="api",
                                  conversation_id=conversation_id, create_conversation=conversation_id is None,
                                  environment=self.environment, run_id=run_id)
        return run

    async def _end(self, updater: TaskUpdater, run: Run) -> None:
        metadata = {"run_id": str(run.pk), "status": run.status}
        if run.status == RunStatus.COMPLETED:
            await updater.complete(updater.new_agent_message(_text_parts(run.output), metadata=metadata))
        elif run.status in PARKED:
            await updater.requires_input(updater.new_agent_message(_text_parts(parked_text(run.pk, run.status)),
                                                                   metadata=metadata))
        elif run.status == RunStatus.CANCELLED:
            await updater.cancel(updater.new_agent_message(_text_parts(f"The run was stopped (run {run.pk})."),
                                                           metadata=metadata))
        else:
            message = f"{ended_error(run.status).message} (run {run.pk})"
            await updater.failed(updater.new_agent_message(_text_parts(message), metadata=metadata))

    async def stop_run(self, task_id: str) -> None:
        """The task's run is asked to stop (a parked or queued one is cancelled at once), as the console's Stop."""
        from agents.runs import request_stop

        run_id = await _recall(self.owner, "run", task_id)
        if run_id:
            run = await Run.objects.filter(pk=run_id, organization=self.actor.organization,
                                           user_id=self.actor.user_id).afirst()
            if run is not None and not run.is_terminal:
                await sync_to_async(request_stop)(run)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await self.stop_run(context.task_id or "")
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel(updater.new_agent_message(_text_parts("Cancelled at the caller's request.")))


class RunRequestHandler(DefaultRequestHandler):
    """The SDK's handler; a cancelled task also stops its run. The handler lives for one HTTP request, so the
    SDK sees every task as held by another replica and only records it cancelled: stopping the run is ours."""

    async def on_cancel_task(self, params: Any, context: ServerCallContext) -> Task | None:
        task = await super().on_cancel_task(params, context)
        assert isinstance(self.agent_executor, RunExecutor)
        await self.agent_executor.stop_run(params.id)
        return task


def _text_parts(text: str) -> list:
    return [new_text_part(text)]


# ------------------------------------------------------------------ the endpoint


class _OwnerContext(DefaultServerCallContextBuilder):
    """The SDK's context (the request's headers: its version negotiation reads them) and whose tasks these are."""

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state["owner"] = self.owner
        return context


async def endpoint(request: Request) -> Response:
    try:
        actor, agent, environment, spec = await caller(request)
        _within_limit(request)
    except Refused as refused:
        return refused.response()
    handler = RunRequestHandler(agent_executor=RunExecutor(actor, agent, environment), task_store=TASKS,
                                agent_card=card_for(request, agent, environment, spec))
    dispatcher = JsonRpcDispatcher(request_handler=handler, context_builder=_OwnerContext(owner_of(actor)),
                                   enable_v0_3_compat=True)
    try:
        response = await dispatcher.handle_requests(request)
    except BaseException:
        await handler.aclose()
        raise
    # The handler lives for this request, and its active tasks' producer and dispatch loops with it. Left to the
    # garbage collector, they were closed in whichever thread collected them, where their cleanup (a queue
    # shutdown taking a lock) hung a Django request's thread for good. Close them once the answer is sent
    # (for message/stream, after its last event).
    after = BackgroundTasks()
    if response.background is not None:
        after.add_task(response.background)
    after.add_task(handler.aclose)
    response.background = after
    return response


def _within_limit(request: Request) -> None:
    """The body limit every /api/ request has (agenticos/middleware.py), which this app in front of Django would
    otherwise not: past DATA_UPLOAD_MAX_MEMORY_SIZE a 413, before the SDK reads it."""
    try:
        length = int(request.headers.get("content-length") or 0)
    except ValueError:
        raise Refused(400, "The Content-Length header is not a number.", "bad_request") from None
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is not None and length > limit:
        raise Refused(413, f"The request body is larger than {limit} bytes.", "too_large")


async def not_allowed(request: Request) -> Response:
    return JSONResponse({"error": {"code": "method_not_allowed", "message": "POST JSON-RPC to this endpoint."}},
                        status_code=405)


application = Starlette(routes=[
    Route("/a2a/{agent}" + CARD_PATH, agent_card, methods=["GET"]),
    Route("/a2a/{agent}", endpoint, methods=["POST"]),
    Route("/a2a/{agent}/", endpoint, methods=["POST"]),
    Route("/a2a/{agent}", not_allowed, methods=["GET", "PUT", "PATCH", "DELETE"]),
])


def handles(scope: dict) -> bool:
    return scope.get("type") == "http" and str(scope.get("path", "")).startswith("/a2a/")



