"""The Builder's rollout panel (Versions): start a rollout of a published version on production, watch it side by
side with the base, and pause, advance, promote or abort it. The rules are agents.rollouts' (the API's too); this
module only reads the form and draws the result. Who may not publish the agent sees the panel read-only."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Invalid, NotFound
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get
from agents import rollouts
from agents.models import Agent, Environment, Rollout
from console.base import console_view
from governance.grants import PUBLISH, require_agent_access

ENVIRONMENT = "production"
ACTIONS = {"pause", "advance", "promote", "abort"}
# Metric rows of the side-by-side table: (key, label, how to show it).
ROWS = [
    ("runs", "Ended runs", "int"), ("failed_share", "Failed", "share"), ("guardrail_blocked", "Guardrail blocks", "int"),
    ("approval_rejected", "Runs with a rejected approval", "int"), ("thumbs_down_share", "👎 among rated answers", "share"), ("cost_per_run_usd", "Cost per run", "usd"),
    ("p95_duration_seconds", "p95 duration", "seconds"), ("input_tokens", "Input tokens", "int"),
    ("output_tokens", "Output tokens", "int"),
]


def _shown(value: Any, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "share":
        return f"{float(value):.1%}"
    if kind == "usd":
        return f"${Decimal(value).normalize():f}"
    if kind == "seconds":
        return f"{value:.1f} s"
    return str(value)


def panel(actor: Actor, agent: Agent, can_publish: bool) -> dict[str, Any]:
    """What the panel draws: the open rollout with its metrics, the last ended ones, and the start form."""
    env = Environment.objects.select_related("version").filter(agent=agent, name=ENVIRONMENT).first()
    if env is None:
        return {"available": False}
    current = (Rollout.objects.select_related("base", "candidate").filter(pk=env.rollout_id).first()
               if env.rollout_id else None)
    found: dict[str, Any] = {"available": True, "environment": env, "open": current, "can_publish": can_publish}
    if current is not None:
        measured = rollouts.metrics(current)
        found["metrics"] = measured
        found["rows"] = [{"label": _(label), "base": _shown(measured["base"][key], kind),
                          "candidate": _shown(measured["candidate"][key], kind)} for key, label, kind in ROWS]
    found["ended"] = list(Rollout.objects.select_related("base", "candidate")
                          .filter(agent=agent, environment=ENVIRONMENT).exclude(status__in=rollouts.OPEN)[:3])
    found["candidates"] = list(agent.versions.filter(number__gt=0).exclude(pk=env.version_id)
                               .order_by("-number").values_list("number", flat=True)[:20])
    return found


def _back(agent: Agent) -> HttpResponse:
    return redirect(reverse("console:builder", args=[agent.pk]) + "#rollout")


def _number(raw: str, field: str) -> int | None:
    raw = (raw or "").strip()
    if not raw:
        return None
    if not digits_only(raw):
        raise Invalid(_("Write a whole number."), details={"field": field})
    return int(raw)


def _steps(raw: str) -> list[int]:
    """"25, 50, 100" → [25, 50, 100] (the rules are the service's)."""
    parts = [part.strip().rstrip("%").strip() for part in (raw or "").replace(";", ",").split(",")]
    if any(part and not digits_only(part) for part in parts):
        raise Invalid(_("Steps are percentages separated by commas, e.g. 25, 50, 100."), details={"field": "steps"})
    return [int(part) for part in parts if part]


def _refused(request: HttpRequest, exc: Invalid) -> None:
    messages.error(request, exc.message)


@require_POST
@console_view("agents:view")
def start(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent = org_get(actor, Agent, agent_id)
    require_agent_access(actor, agent, PUBLISH)
    post = request.POST
    try:
        failure_multiple = None
        if post.get("failure_multiple", "").strip():
            try:
                failure_multiple = Decimal(post["failure_multiple"].strip())
            except InvalidOperation:
                raise Invalid(_("Write a number, e.g. 2."), details={"field": "failure_multiple"}) from None
            if failure_multiple < 1:
                raise Invalid(_("The failure multiple is at least 1."), details={"field": "failure_multiple"})
        cost = _number(post.get("cost_increase_pct", ""), "cost_increase_pct")
        options: dict[str, Any] = {"cost_increase_pct": cost if cost else None}
        if failure_multiple is not None:
            options["failure_multiple"] = failure_multiple
        min_runs = _number(post.get("min_runs", ""), "min_runs")
        if min_runs:
            options["min_runs"] = min_runs
        for name in ("guardrail_multiple", "rejection_multiple", "thumbs_down_multiple"):
            if name in post:  # an empty field: that share is not watched (the service checks the number)
                options[name] = post[name].strip() or None
        rollout = rollouts.start_rollout(
            actor=actor, agent=agent, environment=ENVIRONMENT,
            candidate=_number(post.get("candidate_version", ""), "candidate_version") or 0,
            share=_number(post.get("share", ""), "share") or 0, steps=_steps(post.get("steps", "")),
            step_minutes=_number(post.get("step_minutes", ""), "step_minutes"),
            reason=post.get("reason", "")[:500], **options)
    except Invalid as exc:
        _refused(request, exc)
        return _back(agent)
    messages.success(request, _("v%(candidate)s now serves %(share)s %% of new conversations on production.")
                     % {"candidate": rollout.candidate.number, "share": rollout.share})
    return _back(agent)


@require_POST
@console_view("agents:view")
def act(request: HttpRequest, actor: Actor, agent_id: Any, rollout_id: Any, action: str) -> HttpResponse:
    agent = org_get(actor, Agent, agent_id)
    if action not in ACTIONS:
        raise NotFound("No such action.")
    rollout = rollouts.get_rollout(actor=actor, agent=agent, environment=ENVIRONMENT, rollout_id=rollout_id)
    try:
        if action == "pause":
            done = rollouts.pause_rollout(actor=actor, rollout=rollout)
            text = _("Rollout resumed.") if done.status == Rollout.Status.ACTIVE else _(
                "Rollout paused: no new conversation goes to the candidate.")
        elif action == "advance":
            done = rollouts.advance_rollout(actor=actor, rollout=rollout,
                                            share=_number(request.POST.get("share", ""), "share"))
            text = (_("v%(n)s is production's version now.") % {"n": done.candidate.number}
                    if done.status == Rollout.Status.PROMOTED
                    else _("v%(n)s now serves %(share)s %%.") % {"n": done.candidate.number, "share": done.share})
        elif action == "promote":
            done = rollouts.promote_rollout(actor=actor, rollout=rollout)
            text = _("v%(n)s is production's version now.") % {"n": done.candidate.number}
        else:
            rollouts.abort_rollout(actor=actor, rollout=rollout, reason=request.POST.get("reason", "")[:500])
            text = _("Rollout aborted: everyone is on the base version again.")
    except Invalid as exc:
        _refused(request, exc)
        return _back(agent)
    messages.success(request, text)
    return _back(agent)
