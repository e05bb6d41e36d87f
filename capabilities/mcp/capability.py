"""The `mcp` capability: each bound connection's tools through pydantic-ai's `MCPToolset`, allow-listed
per binding, prefixed with the connection's name (`<name>_<tool>`), so approvals and renames key on the
prefixed id. With `tool_search` bound, these toolsets are marked for deferred loading at run time.

Config `{connections: [{connection_id, allowed_tools, tool_approval}]}`: one capability binding carries
every server (a capability is bound once per agent). Approval per prefixed tool name, else the binding's.
The address is checked (netguard) when the run is assembled, and a refused server's tools are left out;
every request the MCP client then sends goes through `netguard.PinnedTransport`, so the same address
policy and DNS pin as custom tools and web fetch cover MCP traffic (SSE streams and redirects included).
The connection's transport (streamable HTTP or SSE) is used as registered, never guessed from the URL.
A connection added from the catalog (capabilities.mcp.catalog) carries OAuth tokens instead of a header: the
organization's, or the run's person's when each person connects their own account; without one its tools are
left out of the run (capabilities.mcp.oauth refreshes an expired token as the client uses it).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import PreparedToolset
from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

from agenticos import netguard
from capabilities.base import BuildContext, Built, Capability


class McpBinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    connection_id: str
    allowed_tools: list[str] | None = Field(default=None, description="Server tool names (unprefixed); null = all.")
    tool_approval: dict[str, str] = Field(default_factory=dict, description="Per prefixed tool name.")


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    connections: list[McpBinding] = Field(default_factory=list)


def _defer_when_searching(ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
    """Deferral is half of the tool_search decision: only when that capability is bound in this run."""
    if not ctx.deps.scratch.get("tool_search_active"):
        return tool_defs
    return [replace(td, defer_loading=True) for td in tool_defs]


def _approval(approvals: dict[str, str], default: str) -> Callable[[Any, ToolDefinition, dict[str, Any]], bool]:
    def needs(ctx: Any, tool_def: ToolDefinition, args: dict[str, Any]) -> bool:
        return approvals.get(tool_def.name, default) == "required"

    return needs


def _address_ok(url: str) -> bool:
    try:
        asyncio.run(netguard.check_url(url))
    except netguard.Refused:
        return False
    return True


def _catalog_credentials(rows: Any, user_id: int | None) -> dict[uuid.UUID, Any]:
    """The OAuth `auth` of each catalog connection: the organization's credential, or the run's person's for a
    service each person connects (capabilities.mcp.catalog). One query."""
    from django.db.models import Q

    from capabilities.mcp import catalog, oauth
    from capabilities.models import McpCredential

    keyed = {row.pk: catalog.get(row.catalog_key) for row in rows if row.catalog_key}
    if not keyed:
        return {}
    creds = McpCredential.objects.select_related("connection").filter(
        connection_id__in=list(keyed), connected_at__isnull=False).filter(
        Q(user__isnull=True) | Q(user_id=user_id) if user_id is not None else Q(user__isnull=True))
    out = {}
    for cred in creds:
        entry = keyed[cred.connection_id]
        if entry is not None and (cred.user_id is None) == (entry.auth == "organization"):
            out[cred.connection_id] = oauth.runtime_auth(entry, cred)
    return out


def build(ctx: BuildContext) -> list[Built]:
    from fastmcp import Client

    from capabilities.mcp.services import headers_for, transport_for
    from capabilities.models import McpConnection

    assert isinstance(ctx.config, McpConfig)
    wanted: dict[uuid.UUID, McpBinding] = {}
    for entry in ctx.config.connections:
        try:
            wanted[uuid.UUID(entry.connection_id)] = entry
        except ValueError:
            continue
    rows = McpConnection.objects.filter(organization_id=ctx.organization_id, pk__in=list(wanted)).select_related(
        "auth_secret")
    signed_in = _catalog_credentials(rows, ctx.deps.user_id)
    out: list[Built] = []
    default = ctx.binding.approval
    for row in rows:
        entry = wanted[row.pk]
        if not _address_ok(row.url):
            continue
        if row.catalog_key:
            auth = signed_in.get(row.pk)
            if auth is None:  # nobody connected it (for this person): its tools are left out of the run
                continue
            client = Client(transport_for(row.url, row.transport, {}, auth))
        else:
            client = Client(transport_for(row.url, row.transport, headers_for(row)))
        toolset: Any = MCPToolset(client, id=f"mcp_{row.name}", max_retries=2)
        if entry.allowed_tools is not None:
            allowed = set(entry.allowed_tools)
            toolset = toolset.filtered(lambda run_ctx, td, allowed=allowed: td.name in allowed)
        toolset = toolset.prefixed(row.name)
        toolset = ApprovalRequiredToolset(toolset, approval_required_func=_approval(dict(entry.tool_approval), default))
        out.append(PreparedToolset(toolset, _defer_when_searching))
    return out


CAPABILITY = Capability(
    id="mcp",
    name="MCP servers",
    category="utility",
    description="Tools from the MCP servers connected to this organization, named <server>_<tool>.",
    offers="tools from your connected MCP servers",
    examples=(
        "Create an issue in our tracker through its MCP server.",
        "Find the onboarding page with our wiki's MCP server.",
        "What does our CRM's MCP server know about Acme?",
    ),
    never_does=(
        "It never offers a server tool the binding left out of its allowed list, and never reaches "
        "cloud-metadata addresses, or private ones unless an operator allowed that host: a server whose "
        "address is refused is left out of the run."
    ),
    tools=(),
    tools_note=("No fixed tools: its tools are what each connected server lists (within the binding's allowed "
                "list), prefixed with the connection's name."),
    config_model=McpConfig,
    build=build,
)
