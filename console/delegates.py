"""An agent's delegates: the organization's own agents (`subagents`) and remote agents (`external_agents`) shown
side by side, as the catalog's "Agents remotos por A2A" asks of the delegation settings.

The page edits the draft spec's two lists through `agents.services.update_agent` (edit access, the structural
checks) and shows what publishing would say about them (`publish_problems`: delegation enabled, `agents:run` on
each delegate, a remote agent of this organization whose key the publisher may use, one name per delegate).
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Invalid
from agenticos.tenancy import Actor, org_get, org_queryset
from agents import services as agent_services
from agents.models import Agent
from capabilities import spec_checks
from capabilities.remote_agents.models import RemoteAgent
from console.base import console_view, problems_by_field, screen
from governance.grants import EDIT, VIEW, at_least, require_agent_access, visible_agents

MODES = ("sync", "async", "auto")
_LISTS = ("subagents", "external_agents")


def _agent(actor: Actor, agent_id: Any) -> tuple[Agent, str]:
    agent = org_get(actor, Agent, agent_id)
    return agent, require_agent_access(actor, agent, VIEW)


def remote_name(name: str) -> str:
    """A remote agent's name as the spec takes it (letters, digits and dashes)."""
    return re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-")[:64] or "remote-agent"


def _rows(actor: Actor, spec: dict[str, Any]) -> list[dict[str, Any]]:
    subs = [s for s in spec.get("subagents") or [] if isinstance(s, dict)]
    remotes = [e for e in spec.get("external_agents") or [] if isinstance(e, dict)]
    agents = {str(a.pk): a for a in visible_agents(actor).filter(
        pk__in=[_uuid(s.get("agent_id")) for s in subs if _uuid(s.get("agent_id"))])}
    registered = {str(r.pk): r for r in org_queryset(actor, RemoteAgent).filter(
        pk__in=[_uuid(e.get("remote_agent_id")) for e in remotes if _uuid(e.get("remote_agent_id"))])}
    rows = [{"list": "subagents", "name": s.get("name", ""), "description": s.get("description", ""),
             "mode": s.get("mode") or "", "agent": agents.get(str(s.get("agent_id")))} for s in subs]
    rows += [{"list": "external_agents", "name": e.get("name", ""), "description": e.get("description", ""),
              "mode": e.get("mode") or "", "remote": registered.get(str(e.get("remote_agent_id")))} for e in remotes]
    return rows


def _uuid(value: Any) -> Any:
    import uuid

    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _page(request: HttpRequest, actor: Actor, agent: Agent, level: str, *, status: int = 200, **extra: Any
          ) -> HttpResponse:
    spec = agent.draft_spec or {}
    problems = [p for p in spec_checks.publish_problems(actor, spec, agent=agent)
                if str(p.get("field", "")).startswith(_LISTS)]
    bindings = [b for b in spec.get("capabilities") or [] if isinstance(b, dict)]
    delegation = next((b for b in bindings if b.get("id") == "subagents"), None)
    context = {
        "nav": "agents",
        "agent": agent,
        "rows": _rows(actor, spec),
        "can_edit": at_least(level, EDIT),
        "delegation_on": delegation is not None and delegation.get("enabled", True) is not False,
        "own_agents": [(f"agent:{a.pk}", a.name) for a in visible_agents(actor).exclude(pk=agent.pk).order_by("name")],
        "remote_agents": [(f"remote:{r.pk}", r.name) for r in org_queryset(actor, RemoteAgent).order_by("name")],
        "modes": MODES,
        "problems": problems,
        "form": {},
        "errors": {},
        **extra,
    }
    return screen(request, "console/delegates.html", context, status=status)


@console_view("agents:view")
def delegates(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    return _page(request, actor, agent, level)


def _entry(actor: Actor, post: Any) -> tuple[str, dict[str, Any]]:
    """The list and entry the add form describes; the delegate must be one this person can see."""
    kind, _sep, pk = str(post.get("delegate") or "").partition(":")
    mode = post.get("mode") or None
    if mode is not None and mode not in MODES:
        raise Invalid(_("Choose a mode."), details={"field": "mode"})
    name = str(post.get("name") or "").strip()
    description = str(post.get("description") or "").strip()
    if kind == "agent" and _uuid(pk):
        target = visible_agents(actor).filter(pk=_uuid(pk)).first()
        if target is not None:
            return "subagents", {"name": (name or target.name)[:64], "agent_id": str(target.pk),
                                 "description": description or (target.draft_spec or {}).get("description", ""),
                                 **({"mode": mode} if mode else {})}
    if kind == "remote" and _uuid(pk):
        remote = org_queryset(actor, RemoteAgent).filter(pk=_uuid(pk)).first()
        if remote is not None:
            return "external_agents", {"name": name or remote_name(remote.name), "remote_agent_id": str(remote.pk),
                                       "description": (description or remote.description)[:1000],
                                       **({"mode": mode} if mode else {})}
    raise Invalid(_("Choose an agent of this organization or a remote agent."), details={"field": "delegate"})


def _save(request: HttpRequest, actor: Actor, agent: Agent, spec: dict[str, Any], done: str) -> HttpResponse:
    try:
        agent_services.update_agent(actor=actor, agent=agent, spec=spec)
    except Invalid as exc:
        agent.refresh_from_db()
        form = {k: str(request.POST.get(k) or "") for k in ("delegate", "name", "description", "mode")}
        return _page(request, actor, agent, require_agent_access(actor, agent, VIEW), status=422, form=form,
                     errors=problems_by_field(exc) or {"all": exc.message})
    messages.success(request, done)
    return redirect(reverse("console-delegates:list", args=[agent.pk]))


@require_POST
@console_view("agents:edit")
def add_delegate(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    require_agent_access(actor, agent, EDIT)
    try:
        key, entry = _entry(actor, request.POST)
    except Invalid as exc:
        form = {k: str(request.POST.get(k) or "") for k in ("delegate", "name", "description", "mode")}
        return _page(request, actor, agent, level, status=422, form=form,
                     errors=problems_by_field(exc) or {"all": exc.message})
    spec = dict(agent.draft_spec or {})
    spec[key] = [*[e for e in spec.get(key) or [] if isinstance(e, dict)], entry]
    return _save(request, actor, agent, spec, _("%(name)s can now be delegated to (in the draft).") % {
        "name": entry["name"]})


@require_POST
@console_view("agents:edit")
def remove_delegate(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    require_agent_access(actor, agent, EDIT)
    key, name = request.POST.get("list"), request.POST.get("name")
    if key not in _LISTS:
        raise Invalid(_("Unknown list."))
    spec = dict(agent.draft_spec or {})
    spec[key] = [e for e in spec.get(key) or [] if not (isinstance(e, dict) and e.get("name") == name)]
    return _save(request, actor, agent, spec, _("%(name)s was removed from the draft's delegates.") % {"name": name})
