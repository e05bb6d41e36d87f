"""Builder → Triggers: an agent's schedules and event webhooks — list with the next firing and the last run,
create / edit, pause / resume, fire now, delete, rotate the signing secret (shown once, with a signed curl).

Every change goes through `triggers.services` / `triggers.firing`, which check edit access on the agent.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.contrib import messages
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Invalid
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get
from agents.models import Agent
from console.base import console_view, screen
from governance.grants import EDIT, at_least, require_agent_access
from triggers import firing, schedule, services
from triggers.models import Trigger, TriggerFiring

TEXT_FIELDS = ("name", "prompt", "environment", "cron", "timezone", "overlap", "delivery", "delivery_binding_id",
               "delivery_chat_id", "delivery_thread")


def _agent(actor: Actor, agent_id: Any) -> tuple[Agent, str]:
    agent = org_get(actor, Agent, agent_id)
    return agent, require_agent_access(actor, agent, "view")


def _form_data(request: HttpRequest, *, creating: bool) -> dict[str, Any]:
    post = request.POST
    data: dict[str, Any] = {field: post.get(field, "").strip() for field in TEXT_FIELDS if field in post}
    if creating:
        data["kind"] = post.get("kind", "schedule")
    if "every_seconds" in post:
        raw = post.get("every_seconds", "").strip()
        if raw and not digits_only(raw):
            raise Invalid(_("Every … seconds must be a whole number."), details={"field": "every_seconds"})
        data["every_seconds"] = int(raw) if raw else None
    for field in ("starts_at", "ends_at"):
        if field in post:
            raw = post.get(field, "").strip()
            data[field] = parse_datetime(raw) if raw else None
    data["run_as_creator"] = post.get("run_as_creator") == "on"
    if not data.get("delivery_binding_id"):
        data.pop("delivery_binding_id", None)
    return data


def _rows(agent: Agent, actor: Actor) -> list[Trigger]:
    last = TriggerFiring.objects.filter(trigger=OuterRef("pk")).order_by("-created_at", "-id")
    qs = (services.agent_triggers(actor, agent)
          .annotate(last_status=Subquery(last.values("status")[:1]), last_run_id=Subquery(last.values("run_id")[:1]),
                    last_run_status=Subquery(last.values("run__status")[:1]))
          .order_by("name", "id"))
    rows: list[Trigger] = list(qs)
    for trigger in rows:
        trigger.description = schedule.describe(trigger.cron) if trigger.cron else (  # type: ignore[attr-defined]
            _("Every %(n)s seconds") % {"n": trigger.every_seconds} if trigger.every_seconds else "")
        trigger.url = services.webhook_url(trigger)  # type: ignore[attr-defined]
        if trigger.next_run_at:
            # The instant in UTC for the page's script (it shows it in the viewer's own timezone), and the text
            # in the trigger's timezone as the title and the fallback. Formatted here: the template's `date`
            # filter would move it to the server's timezone first.
            trigger.next_utc = trigger.next_run_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # type: ignore[attr-defined]
            trigger.next_local = (  # type: ignore[attr-defined]
                trigger.next_run_at.astimezone(schedule.zone(trigger.timezone)).strftime("%Y-%m-%d %H:%M"))
    return rows


def _page(request: HttpRequest, actor: Actor, agent: Agent, level: str, *, status: int = 200,
          **extra: Any) -> HttpResponse:
    from channelbots.models import Binding

    context = {
        "agent": agent,
        "can_edit": at_least(level, EDIT),
        "triggers": _rows(agent, actor),
        "bindings": Binding.objects.filter(agent=agent, organization=actor.organization).select_related("bot"),
        "kinds": Trigger.Kind.choices,
        "overlaps": Trigger.Overlap.choices,
        "deliveries": Trigger.Delivery.choices,
        "form": extra.pop("form", {}),
        **extra,
    }
    return screen(request, "console/triggers.html", context, status=status)


def _back(agent: Agent) -> HttpResponse:
    return redirect(reverse("console-triggers:list", args=[agent.pk]))


@console_view("agents:view")
def trigger_list(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    if request.method != "POST":
        return _page(request, actor, agent, level)
    try:
        trigger, secret = services.create_trigger(actor=actor, agent=agent, data=_form_data(request, creating=True))
    except Invalid as exc:
        return _page(request, actor, agent, level, status=422, error=exc.message, form=request.POST)
    # The secret is in this answer only: no redirect, so it never sits in a session or a URL.
    return _page(request, actor, agent, level, status=201, shown_secret=secret, shown_trigger=trigger,
                 shown_url=services.webhook_url(trigger))


@console_view("agents:view")
def trigger_edit(request: HttpRequest, actor: Actor, agent_id: Any, trigger_id: Any) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    trigger = services.trigger_for(actor, trigger_id)
    if trigger.agent_id != agent.pk:
        return _back(agent)
    if request.method == "POST":
        try:
            services.update_trigger(actor=actor, trigger=trigger, data=_form_data(request, creating=False))
        except Invalid as exc:
            return _page(request, actor, agent, level, status=422, error=exc.message, editing=trigger,
                         form=request.POST)
        messages.success(request, _("Trigger saved."))
        return _back(agent)
    return _page(request, actor, agent, level, editing=trigger)


@require_POST
@console_view("agents:view")
def trigger_action(request: HttpRequest, actor: Actor, agent_id: Any, trigger_id: Any, action: str) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    trigger = services.trigger_for(actor, trigger_id)
    if trigger.agent_id != agent.pk:
        return _back(agent)
    if action in ("pause", "resume"):
        services.set_enabled(actor=actor, trigger=trigger, enabled=action == "resume")
    elif action == "delete":
        services.delete_trigger(actor=actor, trigger=trigger)
        messages.success(request, _("Trigger deleted; its runs stay in Activity."))
    elif action == "fire":
        fired = firing.fire_now(actor=actor, trigger=trigger)
        messages.success(request, _("Fired: run %(run)s started.") % {"run": fired.run.pk if fired.run else "–"})
    elif action == "rotate-secret":
        secret = services.rotate_secret(actor=actor, trigger=trigger)
        return _page(request, actor, agent, level, shown_secret=secret, shown_trigger=trigger,
                     shown_url=services.webhook_url(trigger))
    return _back(agent)


@console_view("agents:view")
def describe_cron(request: HttpRequest, actor: Actor, agent_id: Any) -> JsonResponse:
    """The form's live preview of a cron expression: {"valid", "text"} (cron-descriptor's reading)."""
    _agent(actor, agent_id)
    expression = request.GET.get("cron", "")[:120]
    try:
        expression = schedule.check_cron(expression)
    except Invalid as exc:
        return JsonResponse({"valid": False, "text": exc.message})
    return JsonResponse({"valid": True, "text": schedule.describe(expression)})
