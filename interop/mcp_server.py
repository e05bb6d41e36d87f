"""`/mcp`: the agents an API key may run as MCP tools (`ask_<slug>`), over streamable HTTP.

The `mcp` package's server (its low-level `Server` and `StreamableHTTPSessionManager`, stateless with JSON
responses) behind a Django async view: each request builds a server for its caller, so listing and calling are
scoped to the key's organization and rights by construction, and no session outlives the request."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import MutableMapping
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from agenticos.errors import DomainError
from agenticos.tenancy import Actor
from agents.models import Run, RunStatus
from interop import service
from interop.errors import ApiError, error_response, from_domain
from interop.frames import RunFrames
from interop.openai_views import PARKED, ended_error, parked_text

TOOL_PREFIX = "ask_"
INPUT_SCHEMA = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What to ask the agent."}},
    "required": ["message"],
}


def tool_name(slug: str) -> str:
    return TOOL_PREFIX + slug.replace("-", "_")


def tools_for(actor: Actor) -> dict[str, tuple[str, str]]:
    """{tool name: (agent slug, description)} for the agents the actor may run in production — the agents,
    their grants, and their production versions' specs in one query each."""
    from agents.models import Environment

    agents = [agent for agent, environments in service.runnable_agents(actor)
              if service.DEFAULT_ENVIRONMENT in environments]
    specs = dict(Environment.objects.filter(agent__in=agents, name=service.DEFAULT_ENVIRONMENT)
                 .values_list("agent_id", "version__spec"))
    return {tool_name(agent.slug): (agent.slug, (specs.get(agent.pk) or {}).get("description")
                                    or f"Ask {agent.name}, an AgenticOS agent.") for agent in agents}


def server_for(actor: Actor) -> Server[Any]:
    async def slugs() -> dict[str, tuple[str, str]]:
        return await sync_to_async(tools_for)(actor)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=description, input_schema=INPUT_SCHEMA)
            for name, (_, description) in (await slugs()).items()
        ])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        known = await slugs()
        if params.name not in known:
            return _error(f"Unknown tool {params.name}.")
        message = str((params.arguments or {}).get("message") or "")
        try:
            return await ask(actor, known[params.name][0], message)
        except (ApiError, DomainError) as exc:
            return _error(from_domain(exc).message)

    return Server("agenticos", on_list_tools=list_tools, on_call_tool=call_tool)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def ask(actor: Actor, slug: str, message: str) -> types.CallToolResult:
    run_id = uuid.uuid4()
    turn = service.turn_from_messages([{"role": "user", "content": message}], continuing=False)
    frames = RunFrames(run_id)
    await frames.start(lambda: service.start(actor=actor, model=slug, turn=turn, conversation_id=None, run_id=run_id))
    try:
        async for _ in frames.iterate():
            pass
    finally:
        await frames.close()
    run = await Run.objects.aget(pk=run_id)
    if run.status == RunStatus.COMPLETED:
        text = run.output
    elif run.status in PARKED:
        text = parked_text(run.pk, run.status)
    else:
        return _error(f"{ended_error(run.status).message} (run {run.pk})")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"answer": text, "run_id": str(run.pk), "status": run.status},
    )


@csrf_exempt
async def mcp_endpoint(request: HttpRequest) -> HttpResponseBase:
    try:
        actor = await sync_to_async(service.actor_for)(request)
    except (ApiError, DomainError) as exc:
        response = error_response(from_domain(exc))
        response["WWW-Authenticate"] = 'Bearer realm="mcp"'
        return response
    manager = StreamableHTTPSessionManager(app=server_for(actor), stateless=True, json_response=True)
    return await _serve(manager, request)


async def _serve(manager: StreamableHTTPSessionManager, request: HttpRequest) -> HttpResponse:
    """Hand the Django request to the manager's ASGI side and collect its answer (JSON, so one body)."""
    body = request.body
    done = asyncio.Event()
    sent_body = False
    started: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    headers = [(k.lower().encode(), v.encode()) for k, v in request.headers.items()]
    scope = {"type": "http", "method": request.method, "path": "/mcp", "raw_path": b"/mcp", "root_path": "",
             "scheme": request.scheme, "query_string": request.META.get("QUERY_STRING", "").encode(),
             "headers": headers, "server": (request.get_host(), 80), "client": (request.META.get("REMOTE_ADDR"), 0),
             "http_version": "1.1", "asgi": {"version": "3.0"}}
    async with manager.run():
        await manager.handle_request(scope, receive, send)
    done.set()
    response = HttpResponse(b"".join(chunks), status=started.get("status", 500))
    for name, value in started.get("headers", []):
        if name.lower() not in (b"content-length", b"transfer-encoding", b"connection"):
            response[name.decode()] = value.decode()
    return response
