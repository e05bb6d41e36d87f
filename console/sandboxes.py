"""Settings → Sandboxes in the web console: the organization's sandbox connections (the deployment's own
registered on first visit), registering one (secrets:manage), choosing the default, and the sandboxes open
on each host with runtime, idle time, memory and their activity log (runs:view). Same services and
permissions as the REST API (workspaces/api.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, Invalid
from agenticos.tenancy import Actor, org_get, org_queryset
from console.base import console_view, problems_by_field, screen
from workspaces import connections
from workspaces.api import org_workspaces, sandbox_json
from workspaces.client import SandboxdError
from workspaces.models import SandboxConnection

SHOWN_SANDBOXES = 20


def _open_sandboxes(connection: SandboxConnection) -> tuple[list[dict[str, Any]], str]:
    """This organization's open sandboxes on the connection with their activity, or an error sentence."""
    mine = org_workspaces(connection)
    try:
        client = connections.client_for(connection)
        listed = [item for item in client.workspaces_sync() if str(item.get("id")) in mine][:SHOWN_SANDBOXES]
        rows = []
        for item in listed:
            detail = client.workspace_sync(str(item["id"]))
            rows.append({**sandbox_json(item, mine[str(item["id"])]), "activity": detail.get("activity") or [],
                         "disk_bytes": detail.get("disk_bytes"), "disk_cap": detail.get("disk_cap")})
        return rows, ""
    except (SandboxdError, connections.ConnectionUnavailable) as exc:
        return [], str(exc)


@console_view("agents:view")
def sandboxes(request: HttpRequest, actor: Actor) -> HttpResponse:
    errors: dict[str, str] = {}
    if request.method == "POST":
        actor.require(connections.MANAGE)
        try:
            connections.register(actor=actor, name=request.POST.get("name", ""), url=request.POST.get("url", ""),
                                 secret_id=request.POST.get("secret_id"),
                                 make_default=request.POST.get("is_default") == "on",
                                 kind=request.POST.get("kind") or connections.SANDBOXD)
            messages.success(request, _("The sandbox connection was registered."))
            return redirect("sandbox-settings")
        except (Invalid, Conflict) as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    connections.ensure_default(actor.organization)
    rows = list(org_queryset(actor, SandboxConnection).select_related("secret").order_by("-is_default", "name"))
    observed: dict[str, Any] = {}
    if actor.has("runs:view"):
        for connection in rows:
            if connection.is_default:
                observed[str(connection.pk)] = _open_sandboxes(connection)
    listing = [{"connection": c, "sandboxes": observed.get(str(c.pk), ([], ""))[0],
                "sandbox_error": observed.get(str(c.pk), ([], ""))[1], "observed": str(c.pk) in observed}
               for c in rows]
    from agenticos.services import pickable_secrets

    secrets = pickable_secrets(actor) if actor.has(connections.MANAGE) else []
    return screen(request, "console/settings/sandboxes.html",
                  {"nav": "settings", "tab": "sandboxes", "rows": listing, "secrets": secrets, "errors": errors,
                   "kinds": connections.KINDS},
                  status=422 if errors else 200)


@require_POST
@console_view(connections.MANAGE)
def make_default(request: HttpRequest, actor: Actor, connection_id: Any) -> HttpResponse:
    connections.make_default(actor=actor, connection=org_get(actor, SandboxConnection, connection_id))
    messages.success(request, _("That connection is now the default: agents that name none start new workspaces there."))
    return redirect("sandbox-settings")


@require_POST
@console_view(connections.MANAGE)
def delete(request: HttpRequest, actor: Actor, connection_id: Any) -> HttpResponse:
    connections.delete(actor=actor, connection=org_get(actor, SandboxConnection, connection_id))
    messages.success(request, _("The sandbox connection was deleted; its workspaces' files are kept."))
    return redirect("sandbox-settings")
