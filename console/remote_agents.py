"""Connections → Remote agents: the organization's A2A agents, registered by their agent card.

Thin views over `capabilities.remote_agents.services` (which reads and checks the card, decides who may change a
registration and audits): everyone in the organization sees the list read-only; registering needs `agents:edit`
(a key also `secrets:view`); changing or deleting a registration is for whoever registered it or someone who
edits every agent. Addresses are shown without query or userinfo (a signed URL carries its credential there), a
key only as the name of its vault secret, and a refused form never gives back the address it was sent.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, Forbidden, Invalid
from agenticos.models import Secret
from agenticos.tenancy import Actor, org_get, org_queryset
from capabilities.remote_agents import client, services
from capabilities.remote_agents.models import RemoteAgent
from console.base import console_view, problems_by_field, screen

KEEP_KEY = "keep"


def _ip(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR")


def _actor_with_ip(actor: Actor, request: HttpRequest) -> Actor:
    actor.extra["ip"] = _ip(request)
    return actor


def _decorate(row: RemoteAgent) -> RemoteAgent:
    row.shown_card_url = client.shown_url(row.card_url)  # type: ignore[attr-defined]
    row.shown_endpoint_url = client.shown_url(row.endpoint_url)  # type: ignore[attr-defined]
    skills = row.card.get("skills") if isinstance(row.card, dict) else None
    row.skill_names = [str(s.get("name") or s.get("id") or "") for s in skills or []  # type: ignore[attr-defined]
                       if isinstance(s, dict)][:20]
    return row


def _rows(actor: Actor) -> list[RemoteAgent]:
    rows = org_queryset(actor, RemoteAgent).select_related("secret", "created_by").defer(
        "secret__wrapped_key", "secret__ciphertext").order_by("name")
    return [_decorate(row) for row in rows]


def _secrets(actor: Actor) -> list[Secret]:
    """The vault secrets a key may be chosen from: only for someone who may use them (`secrets:view`)."""
    from agenticos.services import pickable_secrets

    return list(pickable_secrets(actor))


def _errors(exc: Invalid | Conflict | Forbidden) -> dict[str, str]:
    return problems_by_field(exc) or {"all": exc.message}


def _safe_form(post: Any) -> dict[str, str]:
    """What a refused form shows again: the name and the chosen secret, and the address without its query or
    userinfo (where a signed URL or a pasted password would be)."""
    card_url = str(post.get("card_url") or "").strip()
    try:
        shown = client.shown_url(card_url) if card_url else ""
    except ValueError:
        shown = ""
    return {"name": str(post.get("name") or ""), "secret_id": str(post.get("secret_id") or ""), "card_url": shown}


def _list_page(request: HttpRequest, actor: Actor, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = {
        "nav": "remote_agents",
        "rows": _rows(actor),
        "can_register": actor.has("agents:edit"),
        "secrets": _secrets(actor),
        "form": {},
        "errors": {},
        **extra,
    }
    return screen(request, "console/remote_agents/list.html", context, status=status)


@console_view("agents:view")
def remote_agent_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    if request.method != "POST":
        return _list_page(request, actor)
    actor.require("agents:edit")
    try:
        row = services.create_remote_agent(actor=_actor_with_ip(actor, request), card_url=request.POST.get("card_url"),
                                           secret_id=request.POST.get("secret_id") or None,
                                           name=request.POST.get("name"))
    except (Invalid, Conflict, Forbidden) as exc:
        return _list_page(request, actor, status=422 if not isinstance(exc, Forbidden) else 403,
                          form=_safe_form(request.POST), errors=_errors(exc))
    messages.success(request, _("The remote agent %(name)s was registered.") % {"name": row.name})
    return redirect(reverse("console-remote-agents:detail", args=[row.pk]))


def _row(actor: Actor, pk: Any) -> RemoteAgent:
    return _decorate(org_get(actor, RemoteAgent, pk, queryset=org_queryset(actor, RemoteAgent).select_related(
        "secret", "created_by").defer("secret__wrapped_key", "secret__ciphertext")))


def _detail_page(request: HttpRequest, actor: Actor, row: RemoteAgent, *, status: int = 200, **extra: Any
                 ) -> HttpResponse:
    context = {
        "nav": "remote_agents",
        "row": row,
        "can_change": services.can_change(actor, row),
        "can_use_key": actor.has("secrets:view"),
        "secrets": _secrets(actor),
        "keep_key": KEEP_KEY,
        "form": {},
        "errors": {},
        **extra,
    }
    return screen(request, "console/remote_agents/detail.html", context, status=status)


def _changes(post: Any) -> dict[str, Any]:
    """Only what the form changes: an empty address reads the card again where it is; the key is kept unless
    another secret, or none, is chosen."""
    changes: dict[str, Any] = {}
    if str(post.get("card_url") or "").strip():
        changes["card_url"] = post["card_url"]
    if str(post.get("name") or "").strip():
        changes["name"] = post["name"]
    key = post.get("secret_id", KEEP_KEY)
    if key != KEEP_KEY:
        changes["secret_id"] = key or None
    return changes


@console_view("agents:view")
def remote_agent_detail(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    row = _row(actor, pk)
    if request.method != "POST":
        return _detail_page(request, actor, row)
    try:
        services.update_remote_agent(actor=_actor_with_ip(actor, request), row=row, changes=_changes(request.POST))
    except (Invalid, Conflict) as exc:
        return _detail_page(request, actor, _row(actor, pk), status=422, form=_safe_form(request.POST),
                            errors=_errors(exc))
    messages.success(request, _("The agent card was read again and saved."))
    return redirect(reverse("console-remote-agents:detail", args=[row.pk]))


@require_POST
@console_view("agents:edit")
def remote_agent_delete(request: HttpRequest, actor: Actor, pk: Any) -> HttpResponse:
    row = _row(actor, pk)
    services.delete_remote_agent(actor=_actor_with_ip(actor, request), row=row)
    messages.success(request, _("The remote agent %(name)s was deleted.") % {"name": row.name})
    return redirect(reverse("console-remote-agents:list"))
