"""MCP connections: registered per organization, checked on save by listing the server's tools."""

from __future__ import annotations

import re
from typing import Any

from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from agenticos import audit, netguard, vault
from agenticos.errors import Conflict, Forbidden, Invalid, NotFound
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


def transport_for(url: str, transport: str, headers: dict[str, str], auth: Any = None) -> Any:
    """The registered transport over the pinned HTTP client: every request is address-checked and pinned.
    `auth` is a catalog connection's OAuth provider (capabilities.mcp.oauth.runtime_auth)."""
    from fastmcp.client.transports import SSETransport, StreamableHttpTransport

    kind = SSETransport if transport == McpConnection.Transport.SSE else StreamableHttpTransport
    return kind(url, headers=headers, auth=auth, httpx_client_factory=netguard.pinned_client_factory)


async def list_server_tools(url: str, transport: str, headers: dict[str, str],
                            auth: Any = None) -> list[dict[str, str]]:
    """Connect and list tools. Raises netguard.Refused for a refused address, Exception for anything else."""
    from fastmcp import Client

    await netguard.check_url(url)
    async with Client(transport_for(url, transport, headers, auth), timeout=CHECK_TIMEOUT) as client:
        tools = await client.list_tools()
    return [{"name": t.name, "description": (t.description or "")[:500]} for t in tools]


def _check(url: str, transport: str, headers: dict[str, str], auth: Any = None) -> list[dict[str, str]]:
    try:
        return async_to_sync(list_server_tools)(url, transport, headers, auth)
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


def _catalog_auth(actor: Actor, connection: McpConnection) -> Any:
    """A catalog connection is checked with the checker's side of it (the organization's, or their own)."""
    from capabilities.mcp import oauth
    from capabilities.models import McpCredential

    entry = _entry(connection.catalog_key)
    credential = McpCredential.objects.select_related("connection").filter(
        _owned_by(entry, actor), connection=connection, connected_at__isnull=False).first()
    if credential is None:
        raise _problem("url", f"Connect {entry.name} first: its tools are listed with your sign-in.")
    return oauth.runtime_auth(entry, credential)


def check_connection(*, actor: Actor, connection: McpConnection) -> McpConnection:
    auth = _catalog_auth(actor, connection) if connection.catalog_key else None
    tools = _check(connection.url, connection.transport, headers_for(connection), auth)
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


# ---- The catalog: one-click connections (capabilities.mcp.catalog, capabilities.mcp.oauth) ----

CONNECT_FOR_ORGANIZATION = "agents:edit"  # the same as adding a server by hand
CONNECT_FOR_ONESELF = "agents:run"  # whoever may chat with an agent may sign in to their own account


def _entry(key: str) -> Any:
    from capabilities.mcp import catalog

    entry = catalog.get(key)
    if entry is None:
        raise NotFound("No such service in the catalog.")
    return entry


def _connect_permission(entry: Any) -> str:
    return CONNECT_FOR_ORGANIZATION if entry.auth == "organization" else CONNECT_FOR_ONESELF


def _credential_owner(entry: Any, actor: Actor) -> int | None:
    return None if entry.auth == "organization" else actor.user_id


def _owned_by(entry: Any, actor: Actor) -> Q:
    """The credential rows that are the actor's side of a service: the organization's, or their own."""
    owner = _credential_owner(entry, actor)
    return Q(user__isnull=True) if owner is None else Q(user_id=owner)


def catalog_listing(actor: Actor) -> list[dict[str, Any]]:
    """Every catalog entry with this organization's connection and whether the actor (or, for an
    organization-wide service, the organization) is connected. Two queries whatever the catalog's size."""
    from capabilities.mcp import catalog
    from capabilities.models import McpCredential

    rows = {c.catalog_key: c for c in McpConnection.objects.filter(organization=actor.organization)
            .exclude(catalog_key="").only("pk", "catalog_key", "name", "tools")}
    creds = McpCredential.objects.filter(connection__in=list(rows.values()), connected_at__isnull=False).filter(
        Q(user__isnull=True) | Q(user_id=actor.user_id)).values_list("connection__catalog_key", "user_id",
                                                                     "connected_at")
    connected: dict[tuple[str, int | None], Any] = {(key, user): at for key, user, at in creds}
    out = []
    for entry in catalog.entries():
        row = rows.get(entry.key)
        at = connected.get((entry.key, _credential_owner(entry, actor)))
        out.append({"key": entry.key, "name": entry.name, "description": entry.description, "url": entry.url,
                    "logo": entry.logo, "auth": entry.auth, "available": entry.available,
                    "connection_id": str(row.pk) if row else None, "tools": len(row.tools) if row else 0,
                    "connected": at is not None, "connected_at": at,
                    "can_connect": entry.available and actor.has(_connect_permission(entry))})
    return out


def catalog_connected(organization_id: Any, user_id: int | None) -> set[str]:
    """The catalog keys connected on this person's side (their own sign-in, or the organization's for a service
    the organization connects): what a run's agent is told so it offers a connection card only for the rest.
    One query."""
    from capabilities.mcp import catalog
    from capabilities.models import McpCredential

    creds = McpCredential.objects.filter(
        organization_id=organization_id, connected_at__isnull=False,
        connection__organization_id=organization_id).exclude(connection__catalog_key="").filter(
        Q(user__isnull=True) | Q(user_id=user_id) if user_id is not None else Q(user__isnull=True)
    ).values_list("connection__catalog_key", "user_id")
    out = set()
    for key, owner in creds:
        entry = catalog.get(key)
        if entry is not None and (owner is None) == (entry.auth == "organization"):
            out.add(key)
    return out


def _catalog_connection(actor: Actor, entry: Any) -> McpConnection:
    """The organization's connection for a catalog entry, added on first use (its URL is the catalog's)."""
    row = McpConnection.objects.filter(organization=actor.organization, catalog_key=entry.key).first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            row = McpConnection.objects.create(organization=actor.organization, name=entry.key, url=entry.url,
                                               transport=entry.transport, catalog_key=entry.key,
                                               created_by=actor.user)
            audit.record(actor=actor.user, organization=actor.organization, action="mcp_connection.created",
                         target=row, details={"catalog_key": entry.key}, ip_address=actor.extra.get("ip"))
    except IntegrityError:
        raise Conflict(f"An MCP connection named {entry.key!r} already exists: rename or delete it to connect "
                       f"{entry.name} from the catalog.", details={"field": "name"}) from None
    return row


def _flow_problem(exc: Exception) -> Invalid:
    refusal = netguard.refusal_in(exc)
    if refusal is not None:
        return _problem("url", str(refusal))
    # OAuth errors can quote a server's body: only the class is shown.
    return _problem("url", f"The service's sign-in could not be started ({type(exc).__name__}).")


def start_connection(*, actor: Actor, key: str, redirect_uri: str) -> Any:
    """Discover the service's authorization server, register AgenticOS as a client, and return the pending
    flow (`oauth.Pending`: where to send the person; the state and PKCE verifier to keep for the callback)."""
    from capabilities.mcp import oauth
    from capabilities.models import McpCredential

    entry = _entry(key)
    actor.require(_connect_permission(entry))
    if not entry.available:
        raise _problem("key", f"{entry.name} needs an OAuth app registered by the operator (MCP_OAUTH_CLIENTS).")
    if entry.auth == "person" and actor.user_id is None:
        raise Forbidden("Only a person can connect their own account.")
    try:
        # One transaction with the flow's own writes (the library's storage runs on this thread): a refused or
        # failed start leaves no connection, registration or audit row behind.
        with transaction.atomic():
            row = _catalog_connection(actor, entry)
            existing = McpCredential.objects.filter(_owned_by(entry, actor), connection=row).first()
            return async_to_sync(oauth.begin)(entry=entry, connection=row,
                                              user_id=_credential_owner(entry, actor), redirect_uri=redirect_uri,
                                              existing=existing)
    except oauth.NotConnected:
        raise _problem("url", f"{entry.name} answered without asking for a sign-in.") from None
    except (Conflict, Invalid):
        raise
    except Exception as exc:
        raise _flow_problem(exc) from None


def finish_connection(*, actor: Actor, key: str, credential_id: str, code: str, verifier: str,
                      iss: str | None, redirect_uri: str) -> McpConnection:
    """The person is back with a code: exchange it, list the server's tools with the new token, record it."""
    from capabilities.mcp import oauth
    from capabilities.models import McpCredential

    entry = _entry(key)
    actor.require(_connect_permission(entry))
    credential = (McpCredential.objects.select_related("connection")
                  .filter(_owned_by(entry, actor), pk=credential_id, organization=actor.organization,
                          connection__catalog_key=entry.key).first())
    if credential is None:
        raise NotFound("This sign-in was not started here.")
    try:
        async_to_sync(oauth.complete)(entry=entry, credential=credential, redirect_uri=redirect_uri, code=code,
                                      verifier=verifier, iss=iss)
        credential.refresh_from_db()
        tools = async_to_sync(list_server_tools)(entry.url, entry.transport, {}, oauth.runtime_auth(entry, credential))
    except Exception as exc:
        raise _flow_problem(exc) from None
    with transaction.atomic():
        conn = McpConnection.objects.select_for_update().get(pk=credential.connection_id)
        conn.tools, conn.checked_at = tools, timezone.now()
        conn.save(update_fields=["tools", "checked_at"])
        audit.record(actor=actor.user, organization=actor.organization, action="mcp_connection.connected",
                     target=conn, details={"catalog_key": entry.key, "for": entry.auth, "tools": len(tools)},
                     ip_address=actor.extra.get("ip"))
    return conn


def disconnect(*, actor: Actor, key: str) -> bool:
    """Forget the actor's (or, for an organization-wide service, the organization's) credential, after asking
    the authorization server to revoke its tokens. Returns whether there was one."""
    from capabilities.mcp import oauth
    from capabilities.models import McpCredential

    entry = _entry(key)
    actor.require(_connect_permission(entry))
    credential = (McpCredential.objects.select_related("connection")
                  .filter(_owned_by(entry, actor), organization=actor.organization,
                          connection__catalog_key=entry.key).first())
    if credential is None:
        return False
    revoked = async_to_sync(oauth.revoke)(credential) if credential.connected_at else False
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="mcp_connection.disconnected",
                     target=credential.connection, details={"catalog_key": entry.key, "for": entry.auth,
                                                             "revoked": revoked},
                     ip_address=actor.extra.get("ip"))
        credential.delete()
    return True
