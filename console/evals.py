"""Builder → Evaluations: an agent's suites and their cases (written with a form), runs on the draft or a
version with live progress, each run's results per case, and the diff of two runs.

Every change goes through `evals.services`, which checks edit access on the agent (view to read).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Invalid
from agenticos.tenancy import Actor, org_get
from agents.models import Agent, AgentVersion, Environment, ModelProfile, RunStatus
from console.base import console_view, screen
from evals import checks as checks_mod
from evals import services
from evals.models import Suite, SuiteRun
from governance.grants import EDIT, at_least, require_agent_access

CHECK_ROWS = 4
# Which field of a check the form's "value" box fills, per kind.
VALUE_FIELD = {"contains": "value", "not_contains": "value", "equals": "value", "regex": "pattern",
               "tool_called": "tool", "tool_not_called": "tool", "status": "status", "max_cost": "usd",
               "max_steps": "steps", "judge": "rubric"}


def _agent(actor: Actor, agent_id: Any) -> tuple[Agent, str]:
    agent = org_get(actor, Agent, agent_id)
    return agent, require_agent_access(actor, agent, "view")


def _back(agent: Agent, suite: Suite | None = None) -> HttpResponse:
    url = reverse("console-evals:list", args=[agent.pk])
    return redirect(f"{url}?suite={suite.pk}" if suite else url)


def _check_from_row(post, index: int) -> dict[str, Any] | None:
    kind = post.get(f"check_{index}_kind", "").strip()
    value = post.get(f"check_{index}_value", "").strip()
    if not kind:
        return None
    check: dict[str, Any] = {"kind": kind}
    if kind in VALUE_FIELD:
        check[VALUE_FIELD[kind]] = value
    if kind == "tool_called" and post.get(f"check_{index}_args", "").strip():
        try:
            check["args"] = json.loads(post[f"check_{index}_args"])
        except ValueError:
            raise Invalid(_("The arguments of a tool check must be JSON."),
                          details={"problems": [{"field": f"checks.{index}.args", "message": _("Not JSON.")}]}) from None
    if kind == "judge":
        check["model_profile_id"] = post.get(f"check_{index}_profile", "")
    return check


def _case_from_form(request: HttpRequest) -> dict[str, Any]:
    post = request.POST
    history = []
    for role in ("user", "assistant"):
        text = post.get(f"history_{role}", "").strip()
        if text:
            history.append({"role": role, "content": text})
    approvals = {}
    for line in post.get("approvals", "").splitlines():
        tool, _sep, decision = line.partition("=")
        if tool.strip():
            approvals[tool.strip()] = decision.strip()
    answers = {}
    for line in post.get("answers", "").splitlines():
        header, _sep, labels = line.partition("=")
        if header.strip():
            answers[header.strip()] = [label.strip() for label in labels.split(",") if label.strip()]
    checks = [c for c in (_check_from_row(post, i) for i in range(CHECK_ROWS)) if c]
    return {"name": post.get("name", "").strip(), "prompt": post.get("prompt", ""), "history": history,
            "checks": checks, "approvals": approvals, "default_approval": post.get("default_approval", "reject"),
            "answers": answers}


def _without_ids(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in case.items() if k != "id"} for case in cases]


def _runs(agent: Agent, actor: Actor) -> list[SuiteRun]:
    return list(services.agent_suite_runs(actor, agent).order_by("-created_at")[:20])


def _page(request: HttpRequest, actor: Actor, agent: Agent, level: str, *, status: int = 200,
          **extra: Any) -> HttpResponse:
    suites = list(services.agent_suites(actor, agent).order_by("name"))
    wanted = request.GET.get("suite") or request.POST.get("suite")
    suite = next((s for s in suites if str(s.pk) == wanted), suites[0] if suites else None)
    context = {
        "agent": agent,
        "can_edit": at_least(level, EDIT),
        "suites": suites,
        "suite": suite,
        "cases": [{**c, "described": [checks_mod.describe(k) for k in c["checks"]]} for c in services.suite_cases(suite)]
        if suite else [],
        "runs": _runs(agent, actor),
        "versions": list(AgentVersion.objects.filter(agent=agent, number__gt=0).order_by("-number")
                         .values_list("number", flat=True)[:30]),
        "environments": list(Environment.objects.filter(agent=agent).values_list("name", flat=True)),
        "kinds": checks_mod.KINDS,
        "statuses": RunStatus.values,
        "profiles": ModelProfile.objects.filter(organization=actor.organization, kind=ModelProfile.Kind.CHAT),
        "check_rows": range(CHECK_ROWS),
        "form": extra.pop("form", {}),
        **extra,
    }
    return screen(request, "console/evals.html", context, status=status)


@console_view("agents:view")
def suite_list(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    """The tab; a POST creates a suite."""
    agent, level = _agent(actor, agent_id)
    if request.method != "POST":
        return _page(request, actor, agent, level)
    try:
        suite = services.create_suite(actor=actor, agent=agent, data={
            "name": request.POST.get("name", ""), "description": request.POST.get("description", ""),
            "gates_publish": request.POST.get("gates_publish") == "on", "cases": []})
    except Invalid as exc:
        return _page(request, actor, agent, level, status=422, error=exc.message)
    return _back(agent, suite)


@require_POST
@console_view("agents:view")
def suite_action(request: HttpRequest, actor: Actor, agent_id: Any, suite_id: Any, action: str) -> HttpResponse:
    agent, level = _agent(actor, agent_id)
    suite = services.suite_for(actor, agent, suite_id)
    try:
        if action == "add-case":
            cases = [*_without_ids(services.suite_cases(suite)), _case_from_form(request)]
            services.update_suite(actor=actor, suite=suite, data={"cases": cases})
            messages.success(request, _("Case added."))
        elif action == "delete-case":
            keep = [c for c in services.suite_cases(suite) if c["id"] != request.POST.get("case_id")]
            services.update_suite(actor=actor, suite=suite, data={"cases": _without_ids(keep)})
        elif action == "gate":
            services.update_suite(actor=actor, suite=suite, data={"gates_publish": request.POST.get("gates_publish") == "on"})
        elif action == "run":
            suite_run = services.start_suite_run(actor=actor, suite=suite, target=request.POST.get("target", "draft"))
            return redirect(reverse("console-evals:run", args=[agent.pk, suite_run.pk]))
        elif action == "delete":
            services.delete_suite(actor=actor, suite=suite)
            return _back(agent)
    except Invalid as exc:
        return _page(request, actor, agent, level, status=422, error=exc.message, problems=exc.details,
                     form=request.POST)
    return _back(agent, suite)


@console_view("agents:view")
def run_detail(request: HttpRequest, actor: Actor, agent_id: Any, run_id: Any) -> HttpResponse:
    """One suite run's results; while it runs the page reloads its table (progress)."""
    agent, level = _agent(actor, agent_id)
    suite_run = services.suite_run_for(actor, run_id)
    if suite_run.agent_id != agent.pk:
        return _back(agent)
    results = list(suite_run.results.order_by("position"))
    done = sum(1 for r in results if r.status not in ("pending", "running"))
    template = "console/_eval_results.html" if request.headers.get("X-Fragment") else "console/eval_run.html"
    return screen(request, template, {"agent": agent, "suite_run": suite_run, "results": results, "done": done,
                                      "can_edit": at_least(level, EDIT)})


@console_view("agents:view")
def compare(request: HttpRequest, actor: Actor, agent_id: Any) -> HttpResponse:
    agent, _level = _agent(actor, agent_id)
    first = services.suite_run_for(actor, request.GET.get("first", ""))
    second = services.suite_run_for(actor, request.GET.get("second", ""))
    diff = services.compare_runs(actor=actor, first=first, second=second)
    return screen(request, "console/eval_compare.html", {"agent": agent, "diff": diff})
