"""The publish gate: an agent with a suite marked `gates_publish` publishes only when that suite passes on the
draft. `agents.services.publish_agent` calls `check_publish` before it freezes the draft; it runs each gating
suite on the draft (inline, waiting for the cases' runs on the `runs` workers) and refuses naming every
failing case. Without a gating suite it costs one query.
"""

from __future__ import annotations

from agenticos.errors import Invalid
from agenticos.tenancy import Actor
from agents.models import Agent, AgentVersion
from evals import driver, services
from evals.models import CaseResult, Suite, SuiteRun


def check_publish(*, actor: Actor, agent: Agent, version: AgentVersion | None = None) -> None:
    """The draft about to be published, or a published `version` about to be rolled out (agents.rollouts)."""
    target = "draft" if version is None else str(version.number)
    suites = list(Suite.objects.filter(agent=agent, gates_publish=True).select_related("agent").order_by("name"))
    problems: list[dict[str, str]] = []
    runs: list[str] = []
    for suite in suites:
        suite_run = services.start_suite_run(actor=actor, suite=suite, target=target,
                                             purpose=SuiteRun.Purpose.PUBLISH_GATE, enqueue=False)
        driver.run_suite(suite_run.pk)
        suite_run.refresh_from_db()
        runs.append(str(suite_run.pk))
        if suite_run.status == SuiteRun.Status.PASSED:
            continue
        failing = suite_run.results.exclude(status=CaseResult.Status.PASSED).order_by("position")
        for result in failing:
            reasons = "; ".join(c["reason"] for c in result.checks if not c["passed"] and c["reason"]) or result.reason
            problems.append({"field": f"evals.{suite.name}.{result.case_name}",
                             "message": f"{result.case_name}: {result.status}" + (f" — {reasons}" if reasons else "")})
        if not failing.exists():
            problems.append({"field": f"evals.{suite.name}", "message": suite_run.error or suite_run.status})
    if problems:
        names = ", ".join(p["field"].split(".", 2)[-1] for p in problems)
        doing = "published" if version is None else "rolled out"
        raise Invalid(f"The agent cannot be {doing}: its evaluation suite did not pass ({names}).",
                      details={"problems": problems, "suite_runs": runs}, code="evals_failed")
