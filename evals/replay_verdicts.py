"""A verdict per replayed run: the replay set's checks (its suite's `replay_checks`, or "the run completes"
without a suite) evaluated on what the replay run did, with the same pydantic-evals evaluators a suite run's
cases use (evals.checks). A judge check is pydantic-evals' `LLMJudge` on the suite's judge profile, metered
through the one metered path (`checks.MeteredModel` + `driver.JudgeLedger`: caps before, the spend ledger after);
it reads the recorded answer beside the prompt, so a rubric can say "as good as the recorded answer".
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic_evals import Case as EvalCase
from pydantic_evals import Dataset
from pydantic_evals.reporting import ReportCase

from agents.models import ModelProfile
from agents.run_handle import on_db_thread
from agents.spec import load_spec
from evals import checks as checks_mod
from evals.driver import JudgeLedger, SuiteContext, _check_rows, _outcome, _tool_ids
from evals.models import ReplaySet


def _judge_model(replay_set: ReplaySet, ledger: JudgeLedger, check: dict[str, Any]) -> Any:
    from agents.providers import ModelConfigurationError, build_model

    profile = ModelProfile.objects.filter(organization_id=replay_set.organization_id, pk=check["model_profile_id"],
                                          kind=ModelProfile.Kind.CHAT).first()
    if profile is None:
        return None
    try:
        return checks_mod.MeteredModel(build_model(profile), ledger)
    except ModelConfigurationError:
        return None  # the judge then fails its check saying its model cannot be used


def _prepare(replay_set: ReplaySet, run_id: str, status: str) -> tuple[checks_mod.CaseOutcome, list[Any],
                                                                       JudgeLedger]:
    """The replay run's outcome and the set's evaluators, their judges metered (sync, DB)."""
    spec = load_spec(replay_set.version.spec)
    context = SuiteContext(suite_run=None, spec_budget=spec.budget.monthly_usd,  # type: ignore[arg-type]
                           tool_ids=_tool_ids(spec))
    outcome = _outcome(context, run_id, status)
    ledger = JudgeLedger(replay_set.organization, replay_set.agent_id, spec.budget.monthly_usd)
    evaluators = checks_mod.evaluators_for(replay_set.checks)
    for evaluator in evaluators:
        if isinstance(evaluator, checks_mod.Judge):
            evaluator.model = _judge_model(replay_set, ledger, evaluator.spec)
    return outcome, evaluators, ledger


async def judge(replay_set: ReplaySet, *, run_id: str, status: str, prompt: str,
                recorded_output: str) -> tuple[str, list[dict[str, Any]], Decimal]:
    """(verdict, check rows, judge cost) of one finished replay run."""
    outcome, evaluators, ledger = await on_db_thread(_prepare, replay_set, run_id, status)
    # The judge reads the prompt and, as the reference, what the recorded run answered.
    inputs = {"prompt": f"{prompt}\n\n(The recorded answer to compare with: {recorded_output})"
              if recorded_output else prompt}
    dataset: Dataset[Any, checks_mod.CaseOutcome, Any] = Dataset(
        name=f"replay {replay_set.pk}", cases=[EvalCase(name="replayed run", inputs=inputs, evaluators=evaluators)])

    async def task(_inputs: Any) -> checks_mod.CaseOutcome:
        return outcome

    report = await dataset.evaluate(task, name=f"replay {replay_set.pk}", progress=False)
    found: ReportCase | None = report.cases[0] if report.cases else None
    failures = {}
    if found is not None:
        failures = {f.name: f"The check failed to run: {f.error_message[:300]}" for f in found.evaluator_failures}
    rows = _check_rows({"checks": replay_set.checks}, found, outcome, failures)
    verdict = "passed" if rows and all(row["passed"] for row in rows) else "failed"
    return verdict, rows, ledger.cost
