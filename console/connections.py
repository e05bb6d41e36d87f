"""Connections in the console: MCP servers (add, check, the tools they list, delete), database connections
(read / write / full with what each lets an agent do), and the remote A2A agents (listed, managed on their own
page). Thin views over `capabilities.mcp.services` and `capabilities.db_connections.services` — the same
services and permissions as /api/v1/mcp-connections and /api/v1/db-connections. A connection string is
write-only: sealed on save, never shown again; an MCP credential is shown by its vault name only.
Per-tool approval of an MCP server's tools is set where the tools are given to an agent (its Builder).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, Forbidden, Invalid
from agenticos.tenancy import Actor, org_get, org_queryset
from capabilities.custom_tools import budget
from capabilities.models import DatabaseConnection, McpConnection
from console.base import console_view, screen
from console.tools import form_errors, secrets_for, with_ip

READ = "agents:view"
WRITE = "agents:edit"

# What each permission lets an agent do, as the engine enforces it (capabilities/db_connections/engine.py).
CONSEQUENCES = {
    "read": [gettext_lazy("Queries only: every statement runs in a READ ONLY transaction, so PostgreSQL itself "
                          "refuses any change."),
             gettext_lazy("Safe for reports and lookups.")],
    "write": [gettext_lazy("Queries plus INSERT, UPDATE, DELETE and MERGE: the agent can change and delete rows."),
              gettext_lazy("Schema changes (CREATE, ALTER, DROP, TRUNCATE) are rolled back before commit."),
              gettext_lazy("Give run_sql an approval in the agent if a person should confirm each change.")],
    "full": [gettext_lazy("Anything the database user may do, schema changes included: the agent can create, "
                          "alter and drop tables."),
             gettext_lazy("Only for a database you can rebuild; prefer write or read.")],
}


def _remote_agents(actor: Actor) -> list[Any]:
    from capabilities.remote_agents.models import RemoteAgent

    return list(org_queryset(actor, RemoteAgent).only("pk", "name", "description", "checked_at").order_by("name"))


def _databases(actor: Actor) -> list[DatabaseConnection]:
    rows = list(org_queryset(actor, DatabaseConnection).defer("wrapped_key", "ciphertext").order_by("name"))
    for row in rows:
        row.consequences = CONSEQUENCES.get(row.permission, [])  # type: ignore[attr-defined]
    return rows


def _catalog(actor: Actor) -> list[dict[str, Any]]:
    from capabilities.mcp import services as mcp_services

    return mcp_services.catalog_listing(actor)


def _page(request: HttpRequest, actor: Actor, *, status: int = 200, **extra: Any) -> HttpResponse:
    permissions = [{"value": p, "slots": budget.CONNECTION_SLOTS[p], "consequences": CONSEQUENCES[p]}
                   for p in DatabaseConnection.Permission.values]
    context = {
        "nav": "connections",
        "mcp": list(org_queryset(actor, McpConnection).select_related("auth_secret")
                    .defer("auth_secret__wrapped_key", "auth_secret__ciphertext").order_by("name")),
        "databases": _databases(actor),
        "remote_agents": _remote_agents(actor),
        "permissions": permissions, "transports": McpConnection.Transport.choices,
        "can_edit": actor.has(WRITE), "secrets": secrets_for(actor),
        "mcp_form": {}, "mcp_errors": {}, "db_form": {}, "db_errors": {}, "errors": {},
        "catalog": _catalog(actor),
        **extra,
    }
    return screen(request, "console/connections/list.html", context, status=status)


@console_view(READ)
def connection_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    return _page(request, actor)


def _status(exc: Exception) -> int:
    return 403 if isinstance(exc, Forbidden) else 409 if isinstance(exc, Conflict) else 422


@require_POST
@console_view(WRITE)
def mcp_add(request: HttpRequest, actor: Actor) -> HttpResponse:
    """Add a server: the service connects and lists its tools before anything is saved."""
    from capabilities.mcp import services as mcp_services

    data = {key: request.POST.get(key) for key in ("name", "url", "transport", "auth_header", "auth_prefix")}
    data["auth_secret_id"] = request.POST.get("auth_secret_id") or None
    try:
        conn = mcp_services.create_connection(actor=with_ip(actor, request), **mcp_services.clean_input(data))
    except (Invalid, Conflict, Forbidden) as exc:
        form = {k: v for k, v in data.items() if k != "url"}  # an address can carry a token in its query
        return _page(request, actor, status=_status(exc), mcp_form=form, mcp_errors=form_errors(exc))
    messages.success(request, _("Connected to %(name)s: %(n)s tool(s) listed.") % {"name": conn.name,
                                                                                   "n": len(conn.tools)})
    return redirect(reverse("console-connections:list") + f"#mcp-{conn.pk}")


@require_POST
@console_view(WRITE)
def mcp_check(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    from capabilities.mcp import services as mcp_services

    conn = org_get(actor, McpConnection, pk)
    try:
        conn = mcp_services.check_connection(actor=with_ip(actor, request), connection=conn)
    except Invalid as exc:
        return _page(request, actor, status=422, errors={f"mcp {conn.name}": exc.message})
    messages.success(request, _("Checked %(name)s: %(n)s tool(s) listed.") % {"name": conn.name, "n": len(conn.tools)})
    return redirect(reverse("console-connections:list") + f"#mcp-{conn.pk}")


@require_POST
@console_view(WRITE)
def mcp_delete(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    from capabilities.mcp import services as mcp_services

    conn = org_get(actor, McpConnection, pk)
    mcp_services.delete_connection(actor=with_ip(actor, request), connection=conn)
    messages.success(request, _("The MCP connection %(name)s was deleted.") % {"name": conn.name})
    return redirect(reverse("console-connections:list"))


@require_POST
@console_view(WRITE)
def db_add(request: HttpRequest, actor: Actor) -> HttpResponse:
    """Add a database: the service checks the address and connects once before sealing the string."""
    from capabilities.db_connections import services as db_services

    name = (request.POST.get("name") or "").strip()
    permission = request.POST.get("permission") or "read"
    try:
        conn = db_services.create_connection(actor=with_ip(actor, request), name=name,
                                             dsn=request.POST.get("dsn") or "", permission=permission)
    except (Invalid, Conflict, Forbidden) as exc:
        # The connection string is never given back: it holds the password.
        return _page(request, actor, status=_status(exc), db_form={"name": name, "permission": permission},
                     db_errors=form_errors(exc))
    messages.success(request, _("The database connection %(name)s was added.") % {"name": conn.name})
    return redirect(reverse("console-connections:list") + f"#db-{conn.pk}")


@require_POST
@console_view(WRITE)
def db_update(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    """Change the permission (re-checking every agent's 25 slots), limits, or replace the connection string."""
    from capabilities.db_connections import services as db_services

    conn = org_get(actor, DatabaseConnection, pk)
    changes: dict[str, Any] = {}
    for key in ("permission", "row_cap", "statement_timeout_ms", "dsn"):
        value = (request.POST.get(key) or "").strip()
        if value:
            changes[key] = value
    try:
        db_services.update_connection(actor=with_ip(actor, request), connection=conn, changes=changes)
    except (Invalid, Conflict) as exc:
        return _page(request, actor, status=_status(exc), errors={f"database {conn.name}": exc.message})
    messages.success(request, _("The database connection %(name)s was saved.") % {"name": conn.name})
    return redirect(reverse("console-connections:list") + f"#db-{conn.pk}")


@require_POST
@console_view(WRITE)
def db_delete(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    from capabilities.db_connections import services as db_services

    conn = org_get(actor, DatabaseConnection, pk)
    db_services.delete_connection(actor=with_ip(actor, request), connection=conn)
    messages.success(request, _("The database connection %(name)s was deleted.") % {"name": conn.name})
    return redirect(reverse("console-connections:list"))


# ---- One-click connections from the catalog (capabilities.mcp.catalog): Connect, the way back, Disconnect ----

PENDING_KEY = "mcp_oauth_pending"  # in the session: {state: {key, credential, verifier, next}}
MAX_PENDING = 5  # a person who clicks Connect five times without finishing keeps only the latest five


def _callback_uri(request: HttpRequest) -> str:
    """The console's canonical address (FRONTEND_URL), not the request's: a provider's OAuth app registers one
    callback, and behind a proxy the request may not know its public scheme."""
    from django.conf import settings

    return settings.FRONTEND_URL + reverse("console-connections:catalog-callback")


def _safe_next(request: HttpRequest, value: str | None) -> str:
    from django.utils.http import url_has_allowed_host_and_scheme

    if value and url_has_allowed_host_and_scheme(value, allowed_hosts={request.get_host()},
                                                 require_https=request.is_secure()):
        return value
    return reverse("console-connections:list") + "#catalog"


@require_POST
@console_view(READ)
def catalog_connect(request: HttpRequest, actor: Actor, key: str) -> HttpResponse:
    """Connect: discovery and client registration happen here, then the person goes to the provider's sign-in.
    The state and PKCE verifier stay in this browser's session, so only the browser that started may finish."""
    from capabilities.mcp import services as mcp_services

    back = _safe_next(request, request.POST.get("next"))
    try:
        pending = mcp_services.start_connection(actor=with_ip(actor, request), key=key,
                                                redirect_uri=_callback_uri(request))
    except (Invalid, Conflict) as exc:
        messages.error(request, exc.message)
        return redirect(back)
    flows = dict(request.session.get(PENDING_KEY) or {})
    flows[pending.state] = {"key": key, "credential": pending.credential_id, "verifier": pending.verifier,
                            "next": back}
    request.session[PENDING_KEY] = dict(list(flows.items())[-MAX_PENDING:])
    return redirect(pending.url)


@console_view(READ)
def catalog_callback(request: HttpRequest, actor: Actor) -> HttpResponse:
    """The provider sends the person back here with a code (or an error), then on to where they started."""
    from capabilities.mcp import services as mcp_services

    flows = dict(request.session.get(PENDING_KEY) or {})
    flow = flows.pop(request.GET.get("state") or "", None)
    request.session[PENDING_KEY] = flows
    if flow is None:
        return screen(request, "console/error.html",
                      {"message": _("This sign-in was not started in this browser, or it was already finished.")},
                      status=400)
    if request.GET.get("error") or not request.GET.get("code"):
        messages.error(request, _("The service did not connect: the sign-in was cancelled or refused."))
        return redirect(flow["next"])
    try:
        conn = mcp_services.finish_connection(actor=with_ip(actor, request), key=flow["key"],
                                              credential_id=flow["credential"], code=request.GET["code"],
                                              verifier=flow["verifier"], iss=request.GET.get("iss"),
                                              redirect_uri=_callback_uri(request))
    except Invalid as exc:
        messages.error(request, exc.message)
        return redirect(flow["next"])
    messages.success(request, _("Connected %(name)s: %(n)s tool(s) listed.") % {"name": conn.name,
                                                                                "n": len(conn.tools)})
    return redirect(flow["next"])


@require_POST
@console_view(READ)
def catalog_disconnect(request: HttpRequest, actor: Actor, key: str) -> HttpResponse:
    from capabilities.mcp import services as mcp_services

    if mcp_services.disconnect(actor=with_ip(actor, request), key=key):
        messages.success(request, _("Disconnected."))
    return redirect(reverse("console-connections:list") + "#catalog")
