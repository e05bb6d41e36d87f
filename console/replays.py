"""Builder → Evaluations → Replays: start a replay set (recorded runs replayed against the draft, a version or
another model profile), follow its progress, read each run side by side with its recording (answers, tool calls
same / different / new / missing, tokens and cost before and after, the verdict), and set the agent's replay gate.

Every change goes through `evals.replays` / `evals.replay_gate`, which check edit access on the agent and the
run right; a viewer reads. Another organization's agent or replay is 404.
"""

from __future__ import annotations

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
from agents.models import Agent, AgentVersion, Environment, ModelProfile
from console.base import console_view, screen
from evals import replay_gate, replays, run_tags, services
from evals.models import ReplaySet, RunTag
from governance.grants import EDIT, at_least, require_agent_access

VERDICT_LABELS = {"same": "same", "different_arguments": "different arguments", "new": "new", "missing": "missing"}


def _agent(actor: Actor, agent_id: Any) -> tuple[Agent, str]:
    agent = org_get(actor, Agent, agent_id)
    return agent, require_agent_access(actor, agent, "view")


def _whole(raw: str, field: str) -> int | None:
    text = (raw or "").strip()
    if not text:
        return None
    if not digits_only(text):
        raise Invalid(_("Write a whole number."), details={"problems": [{"field": field, "message": _("A number.")}]})
    return int(text)


def _selection(post: Any) -> dict[str, Any]:
    """The form's fields as `replays.select_runs` reads them (it names every bad one)."""
    selection: dict[str, Any] = {}
    for key in ("surface", "feedback", "since", "until", "tag"):
        if post.get(key, "").strip():
            selection[key] = post[key].strip()
    for key in ("version", "last", "sample"):
        number = _whole(post.get(key, ""), key)
        if number is not None:
            selection[key] = number
    return selection


RECENT_RUNS = 20


def _recent_runs(actor: Actor, agent: Agent) -> list[dict[str, Any]]:
    """The newest recorded runs this person may read, with their tags (one query for the tags)."""
    runs = list(replays.readable_runs(actor, agent).filter(status="completed").order_by("-created_at")
                .only("pk", "prompt", "surface", "created_at")[:RECENT_RUNS])
    tags: dict[Any, list[str]] = {}
    for run_id, name in RunTag.objects.filter(run__in=[r.pk for r in runs]).order_by("name").values_list(
            "run_id", "name"):
        tags.setdefault(run_id, []).append(name)
    return [{"run": run, "tags": tags.get(run.pk, [])} for run in runs]


def _page(request: HttpRequest, actor: Actor, agent: Agent, level: str, *, status: int = 200,
          **extra: Any) -> HttpResponse:
    gate = replay_gate.gate_for(actor, agent)
    context = {
        "tags": run_tags.agent_tags(actor, agent),
        "recent_runs": _recent_runs(actor, agent),
        "can_tag": at_least(level, EDIT),
        "agent": agent,
        "can_edit": at_least(level, EDIT) and actor.has("agents:run"),
        "replay_sets": list(replays.agent_replay_sets(actor, agent).order_by("-created_at")[:30]),
        "suites": list(services.agent_suites(actor, agent).order_by("name")),
        "versions": list(AgentVersion.objects.filter(agent=agent, number__gt=0).order_by("-number")
                         .values_list("number", flat=True)[:30]),
        "environments": list(Environment.objects.filter(agent=agent).values_list("name", flat=True)),
        "profiles": ModelProfile.objects.filter(organization=actor.organization, kind=ModelProfile.Kind.CHAT),
        "surfaces": replays.RECORDED_SURFACES,
        "feedback_choices": replays.FEEDBACK_CHOICES,
        "on_mismatch": ReplaySet.OnMismatch.choices,
        "gate": gate,
        **extra,
    }
    return screen(request, "console/replays.html", context, status=status)


@console_view("agents:view")
def replay_list(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    """The tab; a POST starts a replay set and opens it."""
    agent, level = _agent(actor, agent_id)
    if request.method != "POST":
        return _page(request, actor, agent, level)
    post = request.POST
    try:
        replay_set = replays.start_replay(actor=actor, agent=agent, data={
            "target": post.get("target", "draft"), "model_profile_id": post.get("model_profile_id") or None,
            "on_mismatch": post.get("on_mismatch") or ReplaySet.OnMismatch.REFUSE,
            "cap_usd": post.get("cap_usd", "").strip() or None, "suite_id": post.get("suite_id") or None,
            "selection": _selection(post)})
    except Invalid as exc:
        return _page(request, actor, agent, level, status=422, error=exc.message, problems=exc.details)
    return redirect(reverse("console-replays:detail", args=[agent.pk, replay_set.pk]))


def _rows(actor: Actor, replay_set: ReplaySet) -> list[dict[str, Any]]:
    rows = []
    for result in replays.results_for_reader(actor, replay_set):
        calls = [{**call, "label": VERDICT_LABELS.get(call["verdict"], call["verdict"])} for call in result.tool_calls]
        rows.append({"result": result, "calls": calls,
                     "recorded_tokens": result.recorded_input_tokens + result.recorded_output_tokens,
                     "replayed_tokens": result.replayed_input_tokens + result.replayed_output_tokens})
    return rows


@console_view("agents:view")
def replay_detail(request: HttpRequest, actor: Actor, agent_id: Any, replay_id: Any) -> HttpResponse:
    """One replay set: its summary and each run beside its recording; while it runs the page reads its part
    again (refresh.js)."""
    agent, level = _agent(actor, agent_id)
    replay_set = replays.replay_set_for(actor, replay_id)
    if replay_set.agent_id != agent.pk:
        raise NotFound("Replay not found.")
    template = "console/_replay_results.html" if request.headers.get("X-Fragment") else "console/replay.html"
    return screen(request, template, {
        "agent": agent, "replay_set": replay_set, "summary": replays.summary(replay_set),
        "rows": _rows(actor, replay_set),
        "can_edit": at_least(level, EDIT) and actor.has("agents:run")})


@require_POST
@console_view("agents:view")
def replay_cancel(request: HttpRequest, actor: Actor, agent_id: Any, replay_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    replay_set = replays.replay_set_for(actor, replay_id, level=EDIT)
    if replay_set.agent_id != agent.pk:
        raise NotFound("Replay not found.")
    replays.cancel_replay(actor=actor, replay_set=replay_set)
    messages.success(request, _("The replay was asked to stop."))
    return redirect(reverse("console-replays:detail", args=[agent.pk, replay_set.pk]))


@require_POST
@console_view("agents:view")
def tag_run(request: HttpRequest, actor: Actor, agent_id: Any, run_id: Any) -> HttpResponse:
    """Replace a recorded run's tags (comma- or space-separated), so a replay set may pick it by one."""
    agent, level = _agent(actor, agent_id)
    run = run_tags.run_for(actor, agent, run_id, level=EDIT)
    raw = request.POST.get("tags", "").replace(",", " ").split()
    try:
        names = run_tags.set_tags(actor=actor, agent=agent, run=run, tags=raw)
    except Invalid as exc:
        return _page(request, actor, agent, level, status=422, error=exc.message, problems=exc.details)
    messages.success(request, _("Tags saved: %(tags)s.") % {"tags": ", ".join(names) or _("none")})
    return redirect(reverse("console-replays:list", args=[agent.pk]) + "#replay-runs-title")


@require_POST
@console_view("agents:view")
def gate(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    """Require (or change, or drop) the agent's replay gate."""
    agent, level = _agent(actor, agent_id)
    post = request.POST
    try:
        if post.get("remove"):
            replay_gate.remove_gate(actor=actor, agent=agent)
            messages.success(request, _("Publishing no longer waits for a replay."))
        else:
            replay_gate.set_gate(actor=actor, agent=agent, data={
                "runs": _whole(post.get("runs", ""), "runs") or 50, "surface": post.get("surface", ""),
                "suite_id": post.get("suite_id") or None, "on_mismatch": post.get("on_mismatch") or "refuse",
                "cap_usd": post.get("cap_usd", "").strip() or None,
                "max_failed": _whole(post.get("max_failed", ""), "max_failed") or 0})
            messages.success(request, _("Publishing now replays the newest runs against the draft first."))
    except Invalid as exc:
        return _page(request, actor, agent, level, status=422, error=exc.message, problems=exc.details)
    return redirect(reverse("console-replays:list", args=[agent.pk]))
