"""MCP connections: registered per organization, checked on save by listing the server's tools."""

from __future__ import annotations

import re
from typing import Any

from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from django.utils import timezone

from agenticos import audit, netguard, vault
from agenticos.errors import Conflict, Invalid
from agenticos.tenancy import Actor
from capabilities.custom_tools.services import credential_for
from capabilities.models import McpConnection

NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,23}$")
CHECK_TIMEOUT = 15
TOOL_WARNING_THRESHOLD = 30


def _problem(field: str, message: str) -> Invalid:
    return Invalid(message, details={"problems": [{"field": field, "message": message}]})


def clean_input(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": str(data.get("name") or ""),
        "url": str(data.get("url") or ""),
        "transport": str(data.get("transport") or McpConnection.Transport.STREAMABLE_HTTP),
        "auth_secret_id": data.get("auth_secret_id"),
        "auth_header": str(data.get("auth_header") or "Authorization"),
        "auth_prefix": str(data.get("auth_prefix") if data.get("auth_prefix") is not None else "Bearer "),
    }


def headers_for(connection: McpConnection) -> dict[str, str]:
    if connection.auth_secret_id is None:
        return {}
    return {connection.auth_header: f"{connection.auth_prefix}{vault.reveal(connection.auth_secret)}"}


def transport_for(url: str, transport: str, headers: dict[str, str]) -> Any:
    """The registered transport over the pinned HTTP client: every request is address-checked and pinned."""
    from fastmcp.client.transports import SSETransport, StreamableHttpTransport

    kind = SSETransport if transport == McpConnection.Transport.SSE else StreamableHttpTransport
    return kind(url, headers=headers, httpx_client_factory=netguard.pinned_client_factory)


async def list_server_tools(url: str, transport: str, headers: dict[str, str]) -> list[dict[str, str]]:
    """Connect and list tools. Raises netguard.Refused for a refused address, Exception for anything else."""
    from fastmcp import Client

    await netguard.check_url(url)
    async with Client(transport_for(url, transport, headers), timeout=CHECK_TIMEOUT) as client:
        tools = await client.list_tools()
    return [{"name": t.name, "description": (t.description or "")[:500]} for t in tools]


def _check(url: str, transport: str, headers: dict[str, str]) -> list[dict[str, str]]:
    try:
        return async_to_sync(list_server_tools)(url, transport, headers)
    except netguard.Refused as exc:
        raise _problem("url", str(exc)) from None
    except Exception as exc:  # transport errors can quote headers: only the class is shown
        refusal = netguard.refusal_in(exc)  # a refusal at connect time (the pin) arrives wrapped
        if refusal is not None:
            raise _problem("url", str(refusal)) from None
        raise _problem("url", f"Could not list the server's tools ({type(exc).__name__}). Check the URL and "
                              "the credential.") from None


def create_connection(*, actor: Actor, name: str, url: str, transport: str, auth_secret_id: Any = None,
                      auth_header: str = "Authorization", auth_prefix: str = "Bearer ") -> McpConnection:
    if not NAME_RE.match(name):
        raise _problem("name", "Use 1-24 lowercase letters or digits, starting with a letter: tools arrive as "
                               "<name>_<tool>.")
    if transport not in McpConnection.Transport.values:
        raise _problem("transport", "Choose streamable_http or sse.")
    if not url.lower().startswith(("http://", "https://")):
        raise _problem("url", "Give the server's http(s) URL.")
    secret = credential_for(actor, auth_secret_id)
    conn = McpConnection(organization=actor.organization, name=name, url=url, transport=transport,
                         auth_header=auth_header[:64], auth_prefix=auth_prefix[:32], auth_secret=secret,
                         created_by=actor.user)
    conn.tools = _check(url, transport, headers_for(conn))
    conn.checked_at = timezone.now()
    try:
        with transaction.atomic():
            conn.save()
            audit.record(actor=actor.user, organization=actor.organization, action="mcp_connection.created",
                         target=conn, details={"tools": len(conn.tools)}, ip_address=actor.extra.get("ip"))
    except IntegrityError:
        raise Conflict(f"An MCP connection named {name!r} already exists.", details={"field": "name"}) from None
    return conn


def check_connection(*, actor: Actor, connection: McpConnection) -> McpConnection:
    tools = _check(connection.url, connection.transport, headers_for(connection))
    with transaction.atomic():
        conn = McpConnection.objects.select_for_update().get(pk=connection.pk)
        conn.tools, conn.checked_at = tools, timezone.now()
        conn.save(update_fields=["tools", "checked_at"])
        audit.record(actor=actor.user, organization=actor.organization, action="mcp_connection.checked",
                     target=conn, details={"tools": len(tools)}, ip_address=actor.extra.get("ip"))
    return conn


def delete_connection(*, actor: Actor, connection: McpConnection) -> None:
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="mcp_connection.deleted",
                     target=connection, ip_address=actor.extra.get("ip"))
        connection.delete()


def tool_count_warning(spec: dict[str, Any], organization_id: Any) -> dict[str, Any] | None:
    """Builder warning data: the agent's MCP bindings add up to more than 30 tools (allow-list, else last listing)."""
    binding = next((b for b in spec.get("capabilities") or [] if isinstance(b, dict) and b.get("id") == "mcp"), None)
    if binding is None:
        return None
    entries = (binding.get("config") or {}).get("connections") or []
    rows = {str(c.pk): c for c in McpConnection.objects.filter(organization_id=organization_id,
                                                              pk__in=[e.get("connection_id") for e in entries])}
    total = 0
    for entry in entries:
        row = rows.get(str(entry.get("connection_id")))
        if row is None:
            continue
        allowed = entry.get("allowed_tools")
        total += len(allowed) if allowed is not None else len(row.tools)
    if total <= TOOL_WARNING_THRESHOLD:
        return None
    # A rough schema size per tool; the Builder shows it as an estimate.
    return {"tools": total, "threshold": TOOL_WARNING_THRESHOLD, "estimated_tokens": total * 150,
            "suggestion": "tool_search"}
