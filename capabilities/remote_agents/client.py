"""The A2A client side: reading a card and sending one `message/send`, every request through netguard.

The protocol is the `a2a-sdk` client's (card parsing, transport negotiation, JSON-RPC, 0.3/1.0 versions); what
is ours is the HTTP underneath it. The SDK speaks `httpx`, and netguard's pinned transport is written for
`httpx2`, so `PinnedHttpxTransport` is the same policy for an `httpx` client: every request it sends (the card,
each JSON-RPC call, any redirect hop) is checked by `netguard.check_url` and sent to the checked address with
the original Host header and TLS server name; a request that leaves the endpoint's origin goes without the key.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import (
    AgentCard,
    AgentInterface,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from django.conf import settings
from google.protobuf.json_format import MessageToDict
from pydantic_ai import _ssrf

from agenticos import netguard

CARD_MAX_BYTES = 256 * 1024
POLL_SECONDS = 1.0
# httpx logs every request URL at INFO, and a card may name an endpoint whose query signs the request: the same
# filter netguard puts on httpx2's logger.
logging.getLogger("httpx").addFilter(netguard._NoQueryStrings())


class PinnedHttpxTransport(httpx.AsyncBaseTransport):
    def __init__(self, *, home: str | None = None) -> None:
        self._inner = httpx.AsyncHTTPTransport(trust_env=False, verify=netguard.shared_tls_context())
        self._home = home

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        pinned = await netguard.check_url(str(request.url))
        if self._home is not None and not _ssrf._keeps_credentials(self._home, str(request.url)):
            for name in netguard.CREDENTIAL_HEADERS:
                request.headers.pop(name, None)
        request.url = request.url.copy_with(host=pinned.ip.split("%")[0])
        if pinned.is_https:
            request.extensions = {**request.extensions, "sni_hostname": pinned.hostname}
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def pinned_client(*, key: str | None, home: str, timeout: float) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(transport=PinnedHttpxTransport(home=home), headers=headers, trust_env=False,
                             timeout=httpx.Timeout(timeout, connect=min(timeout, 10)), follow_redirects=False)


class CardProblem(Exception):
    """The card could not be read or is not one this platform can call. The message is safe to show."""


@dataclass
class ReadCard:
    card: AgentCard
    data: dict[str, Any]
    endpoint_url: str


async def read_card(card_url: str, *, key: str | None) -> ReadCard:
    """GET the card (through netguard, at most CARD_MAX_BYTES), parse it with the SDK, pick its JSON-RPC
    endpoint. Raises `netguard.Refused` for a refused address and `CardProblem` for anything else."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"} if key else {
        "Accept": "application/json"}
    try:
        fetched = await netguard.safe_request("GET", card_url, headers=headers, timeout=20, max_bytes=CARD_MAX_BYTES,
                                              max_redirects=0)
    except netguard.Refused:
        raise
    except Exception as exc:  # a transport error can quote the URL: only its kind is shown
        raise CardProblem(f"The card could not be read ({type(exc).__name__}).") from None
    if not fetched.ok:
        raise CardProblem(f"The card URL answered HTTP {fetched.status}.")
    try:
        import json

        data = json.loads(fetched.text())
        card = parse_agent_card(dict(data))
    except Exception:
        raise CardProblem("The URL did not return an A2A agent card (JSON with a name and an interface).") from None
    if not card.name:
        raise CardProblem("The agent card has no name.")
    endpoint = next((i.url for i in card.supported_interfaces if i.protocol_binding in ("JSONRPC", "")), "")
    if not endpoint:
        raise CardProblem("The agent card offers no JSON-RPC interface, the one this platform speaks.")
    return ReadCard(card=card, data=MessageToDict(card), endpoint_url=endpoint)


def card_from(data: dict[str, Any], endpoint_url: str | None = None) -> AgentCard:
    """The stored card; with `endpoint_url`, offering only that JSON-RPC interface — the one checked and audited
    at registration — so the SDK's transport choice can never send the key to another interface's host."""
    card = parse_agent_card(dict(data))
    if endpoint_url is None:
        return card
    chosen = next((i for i in card.supported_interfaces
                   if i.url == endpoint_url and i.protocol_binding in ("JSONRPC", "")), None)
    interface = AgentInterface()
    if chosen is not None:
        interface.CopyFrom(chosen)
    interface.url, interface.protocol_binding = endpoint_url, "JSONRPC"
    del card.supported_interfaces[:]
    card.supported_interfaces.append(interface)
    return card


# ------------------------------------------------------------------ one message/send


@dataclass
class Answer:
    text: str
    context_id: str
    task_id: str
    state: str


def _part_text(part: Part) -> str:
    kind = part.WhichOneof("content")
    if kind == "text":
        return part.text
    if kind == "data":
        return "[The remote agent sent a data part, not read here.]"
    if kind in ("raw", "url"):
        label = part.filename or part.media_type or "a file"
        return f"[The remote agent sent a file ({label}), not read here.]"
    return ""


def _parts_text(parts: Any) -> str:
    """Consecutive text parts are one text (a streamed artifact arrives as one part per chunk, split anywhere,
    even inside a word); a data or file part is a line of its own."""
    segments: list[str] = []
    after_text = False
    for part in parts:
        text = _part_text(part)
        if not text:
            continue
        is_text = part.WhichOneof("content") == "text"
        if is_text and after_text:
            segments[-1] += text
        else:
            segments.append(text)
        after_text = is_text
    return "\n".join(segments)


def _message_text(message: Message) -> str:
    return _parts_text(message.parts)


def _task_text(task: Task) -> str:
    artifacts = "\n".join(t for t in (_parts_text(a.parts) for a in task.artifacts) if t)
    status = _message_text(task.status.message) if task.status.HasField("message") else ""
    return artifacts or status


TERMINAL = {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED,
            TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}


def state_name(state: int) -> str:
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


async def send(card_data: dict[str, Any], endpoint_url: str, text: str, *, key: str | None,
               context_id: str | None) -> Answer:
    """One `message/send` with `text`, continuing `context_id` when given; a task that is not finished when the
    call returns is read back with `tasks/get` until it is (within REMOTE_AGENT_TIMEOUT_SECONDS)."""
    timeout = float(settings.REMOTE_AGENT_TIMEOUT_SECONDS)
    card = card_from(card_data, endpoint_url)
    async with pinned_client(key=key, home=endpoint_url, timeout=timeout) as http:
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
        if context_id:
            message.context_id = context_id
        task: Task | None = None
        async for event in client.send_message(SendMessageRequest(message=message)):
            if event.HasField("message"):
                return Answer(text=_message_text(event.message), context_id=event.message.context_id,
                              task_id=event.message.task_id, state="message")
            if event.HasField("task"):
                task = event.task
        if task is None:
            raise CardProblem("The remote agent answered with neither a message nor a task.")
        deadline = asyncio.get_running_loop().time() + timeout
        while task.status.state not in TERMINAL and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(POLL_SECONDS)
            task = await client.get_task(GetTaskRequest(id=task.id))
        return Answer(text=_task_text(task), context_id=task.context_id, task_id=task.id,
                      state=state_name(task.status.state))


def shown_url(url: str) -> str:
    """A card or endpoint address as lists show it: no query, no fragment, no userinfo (a signed URL carries
    its credential there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return f"{parts.scheme}://{netloc}{parts.path}"
