"""The suite driver: a pydantic-evals `Dataset` of the suite run's cases, evaluated with a task that runs each
case as a real run of the agent through the one runner (`agents.runs.start_run`, surface `eval`).

- At most `max_concurrent` cases run at once (pydantic-evals' own limiter, `EVAL_MAX_CONCURRENT`); each
  case's run executes on the `runs` workers like any other, and the driver follows it in the database.
- A case starts only while every cap that meters the agent (agent, organization) has room; once one is used
  up, the cases not started yet are skipped, saying which cap bound. What was spent stays spent (the ledger
  rows of the runs and of the judge are never touched).
- A case that leaves a gated call parked (`park`) is recorded with its parked status, then cancelled, so no
  evaluation waits in anybody's approvals.
- The LLM judge's requests go through `checks.MeteredModel` + `JudgeLedger`: caps before, ledger after.
- Results are written per case as each finishes (`Recorder.teardown`), so a console watching the suite run
  sees progress.

`run_suite` is synchronous: the Celery task calls it, and so does the publish gate (inline, waiting).
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db.models import F
from django.utils import timezone
from pydantic_evals import Case as EvalCase
from pydantic_evals import Dataset
from pydantic_evals.lifecycle import CaseLifecycle
from pydantic_evals.reporting import ReportCase

from agents.models import Conversation, Message, ModelProfile, Run, RunStatus, ToolCall
from agents.run_handle import on_db_thread
from agents.runs import request_stop, start_run
from agents.spec import load_spec
from evals import checks as checks_mod
from evals.models import CaseResult, SuiteRun
from evals.services import TERMINAL_OR_PARKED
from governance import budgets
from governance.pricing import price

logger = logging.getLogger(__name__)
PARKED = (RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER)


# ------------------------------------------------------------------ the judge's ledger


@dataclass
class JudgeLedger:
    """A case's judge requests: refused when a cap is used up, each written to the spend ledger (agent,
    organization, surface `eval`, kind `eval_judge`) and summed for the case's result."""

    organization: Any
    agent_id: Any
    agent_budget: Decimal | None
    cost: Decimal = Decimal("0")
    partial: bool = False

    def _check(self) -> None:
        caps = budgets.caps_for(organization=self.organization, agent_id=self.agent_id, agent_budget=self.agent_budget)
        bound = budgets.first_exhausted(caps)
        if bound is not None:
            raise budgets.BudgetExceeded(bound)

    async def before(self) -> None:
        if budgets.may_bind(organization=self.organization, agent_budget=self.agent_budget):
            await on_db_thread(self._check)

    async def after(self, response: Any) -> None:
        cost, partial = price(response, free=False)
        self.cost += cost
        self.partial = self.partial or partial
        usage = response.usage
        await on_db_thread(budgets.record_spend, organization_id=self.organization.pk, agent_id=self.agent_id,
                           run_id=None, embed_id=None, surface="eval", kind="eval_judge",
                           model=response.model_name or "", input_tokens=usage.input_tokens or 0,
                           output_tokens=usage.output_tokens or 0, cost=cost, partial=partial)


# ------------------------------------------------------------------ one case as a run


@dataclass
class SuiteContext:
    suite_run: SuiteRun
    spec_budget: Decimal | None
    tool_ids: dict[str, str]  # the name the model sees → stable tool id (tool_overrides renames)
    ledgers: dict[str, JudgeLedger] = field(default_factory=dict)
    budget_stop: str = ""


def _tool_ids(spec) -> dict[str, str]:
    names: dict[str, str] = {}
    for binding in spec.capabilities:
        for tool_id, override in binding.tool_overrides.items():
            if override.name:
                names[override.name] = tool_id
    return names


def _land_attachments(suite_run: SuiteRun, case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's text files in storage, in the shape every surface gives the runner."""
    files = []
    for index, item in enumerate(case.get("attachments") or []):
        data = item["content"].encode()
        path = default_storage.save(
            f"evals/{suite_run.organization_id}/{suite_run.pk}/{case['id']}/{index}-{item['name']}", ContentFile(data))
        files.append({"name": item["name"], "mime": item["mime"], "size": len(data), "path": path})
    return files


def _start_case(ctx: SuiteContext, case: dict[str, Any]) -> str | None:
    """Start the case's run (sync), or record why it was skipped and return None."""
    suite_run = ctx.suite_run
    result = CaseResult.objects.get(suite_run=suite_run, case_id=case["id"])
    if not ctx.budget_stop:
        caps = budgets.caps_for(organization=suite_run.organization, agent_id=suite_run.agent_id,
                                agent_budget=ctx.spec_budget)
        bound = budgets.first_exhausted(caps)
        if bound is not None:
            ctx.budget_stop = f"Not run: {bound.label} of ${bound.limit:.2f} is used up."
    if ctx.budget_stop:
        return None
    conversation = Conversation.objects.create(
        organization_id=suite_run.organization_id, agent_id=suite_run.agent_id, owner=None, surface="eval",
        title=f"Evaluation: {case['name']}"[:200])
    Message.objects.bulk_create([
        Message(conversation=conversation, version_id=suite_run.version_id, role=turn["role"], content=turn["content"],
                parts=[{"type": "text", "text": turn["content"]}])
        for turn in case.get("history") or []
    ])
    answers = {key: case.get(key) for key in ("approvals", "default_approval", "answers")}
    run = start_run(
        agent=suite_run.agent, version=suite_run.version, surface="eval", prompt=case["prompt"],
        user=suite_run.started_by, acting_role=suite_run.acting_role, conversation=conversation,
        attachments=_land_attachments(suite_run, case),
        options={"can_ask_user": True, "history_limit": len(case.get("history") or []) or 1,
                 "eval": {"suite_run_id": str(suite_run.pk), "case_id": case["id"], **answers}},
    )
    result.run = run
    result.status = CaseResult.Status.RUNNING
    result.started_at = timezone.now()
    result.save(update_fields=["run", "status", "started_at"])
    return str(run.pk)


def _run_status(run_id: str) -> str:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).get()


def _outcome(ctx: SuiteContext, run_id: str, status: str) -> checks_mod.CaseOutcome:
    run = Run.objects.get(pk=run_id)
    calls = [
        {"tool_id": ctx.tool_ids.get(c.tool_name, c.tool_name), "tool_name": c.tool_name, "args": c.args}
        for c in ToolCall.objects.filter(run_id=run_id).order_by("id")
    ]
    started = run.started_at or run.created_at
    ended = run.finished_at or timezone.now()
    return checks_mod.CaseOutcome(
        run_id=run_id, status=status, output=run.output, tool_calls=calls, input_tokens=run.input_tokens,
        output_tokens=run.output_tokens, steps=run.requests, cost_usd=run.cost_usd,
        duration_ms=max(0, int((ended - started) / timedelta(milliseconds=1))),
    )


def _stop(run_id: str) -> None:
    run = Run.objects.get(pk=run_id)
    request_stop(run)


async def run_case(ctx: SuiteContext, case: dict[str, Any]) -> checks_mod.CaseOutcome:
    """The pydantic-evals task: one case's run, followed until it ends (or parks, or times out)."""
    run_id = await on_db_thread(_start_case, ctx, case)
    if run_id is None:
        return checks_mod.CaseOutcome(run_id=None, status="", output="", skipped=ctx.budget_stop)
    deadline = time.monotonic() + settings.EVAL_CASE_TIMEOUT_SECONDS
    status = RunStatus.QUEUED.value
    while True:
        status = await on_db_thread(_run_status, run_id)
        if status in TERMINAL_OR_PARKED or time.monotonic() > deadline:
            break
        await asyncio.sleep(settings.EVAL_POLL_SECONDS)
    outcome = await on_db_thread(_outcome, ctx, run_id, status)
    if status in PARKED or status not in TERMINAL_OR_PARKED:
        # Parked as the case asked (its status is what the checks see), or past the case's time: nobody is
        # to find an evaluation waiting, so it is stopped.
        await on_db_thread(_stop, run_id)
        if status not in TERMINAL_OR_PARKED:
            outcome.skipped = f"Not finished within {settings.EVAL_CASE_TIMEOUT_SECONDS} s; the run was stopped."
    if status == RunStatus.BUDGET_EXCEEDED and not ctx.budget_stop:
        ctx.budget_stop = "Not run: a budget was used up during the suite."
    return outcome


# ------------------------------------------------------------------ recording


def _check_rows(case: dict[str, Any], report: ReportCase | None, outcome: checks_mod.CaseOutcome | None,
                failures: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for index, check in enumerate(case["checks"]):
        name = f"check_{index}"
        found = report.assertions.get(name) if report is not None else None
        if outcome is not None and outcome.skipped:
            passed, reason = False, outcome.skipped
        elif found is not None:
            passed, reason = bool(found.value), found.reason or ""
        else:
            passed, reason = False, failures.get(name, "The check could not be evaluated.")
        rows.append({"index": index, "kind": check["kind"], "label": checks_mod.describe(check), "passed": passed,
                     "reason": reason[:1000]})
    return rows


def _write_result(ctx: SuiteContext, case: dict[str, Any], report: Any) -> None:
    result = CaseResult.objects.get(suite_run=ctx.suite_run, case_id=case["id"])
    outcome = report.output if isinstance(report, ReportCase) else None
    failures = {}
    if isinstance(report, ReportCase):
        failures = {f.name: f"The check failed to run: {f.error_message[:300]}" for f in report.evaluator_failures}
    rows = _check_rows(case, report if isinstance(report, ReportCase) else None, outcome, failures)
    ledger = ctx.ledgers.get(case["id"])
    judge_cost = ledger.cost if ledger else Decimal("0")
    if outcome is not None and outcome.skipped and outcome.run_id is None:
        status, reason = CaseResult.Status.SKIPPED, outcome.skipped
    elif outcome is None:
        status = CaseResult.Status.ERROR
        reason = getattr(report, "error_message", "The case did not finish.")[:1000]
    else:
        status = CaseResult.Status.PASSED if all(r["passed"] for r in rows) else CaseResult.Status.FAILED
        reason = outcome.skipped
    if outcome is not None:
        result.run_status = outcome.status
        result.output = outcome.output[:20_000]
        result.input_tokens, result.output_tokens = outcome.input_tokens, outcome.output_tokens
        result.steps, result.cost_usd, result.duration_ms = outcome.steps, outcome.cost_usd, outcome.duration_ms
    result.status, result.reason, result.checks, result.judge_cost_usd = status, reason, rows, judge_cost
    result.finished_at = timezone.now()
    result.save()
    counter = {CaseResult.Status.PASSED: "passed", CaseResult.Status.SKIPPED: "skipped"}.get(status, "failed")
    SuiteRun.objects.filter(pk=ctx.suite_run.pk).update(**{
        counter: F(counter) + 1,
        "input_tokens": F("input_tokens") + result.input_tokens,
        "output_tokens": F("output_tokens") + result.output_tokens,
        "cost_usd": F("cost_usd") + result.cost_usd + judge_cost,
    })


def _recorder(ctx: SuiteContext):
    class Recorder(CaseLifecycle):
        async def teardown(self, result) -> None:
            case = self.case.inputs
            try:
                await on_db_thread(_write_result, ctx, case, result)
            except Exception:  # one case's bookkeeping must not abort the suite
                logger.exception("could not record the result of case %s", case.get("id"))

    return Recorder


# ------------------------------------------------------------------ the suite


def _claim(suite_run_id: Any) -> SuiteRun | None:
    claimed = SuiteRun.objects.filter(pk=suite_run_id, status=SuiteRun.Status.QUEUED).update(
        status=SuiteRun.Status.RUNNING, started_at=timezone.now())
    if not claimed:
        return None
    return SuiteRun.objects.select_related("organization", "agent", "version", "started_by").get(pk=suite_run_id)


def _judge_model(ctx: SuiteContext, case: dict[str, Any], check: dict[str, Any]):
    from agents.providers import build_model

    profile = ModelProfile.objects.filter(organization_id=ctx.suite_run.organization_id, pk=check["model_profile_id"],
                                          kind=ModelProfile.Kind.CHAT).first()
    if profile is None:
        return None
    from agents.providers import ModelConfigurationError

    ledger = ctx.ledgers.setdefault(case["id"], JudgeLedger(ctx.suite_run.organization, ctx.suite_run.agent_id,
                                                            ctx.spec_budget))
    try:
        return checks_mod.MeteredModel(build_model(profile), ledger)
    except ModelConfigurationError:
        return None  # the judge then fails its check saying its model cannot be used


def _dataset(ctx: SuiteContext) -> Dataset:
    cases = []
    for case in ctx.suite_run.cases:
        evaluators = checks_mod.evaluators_for(case["checks"])
        for evaluator in evaluators:
            if isinstance(evaluator, checks_mod.Judge):
                evaluator.model = _judge_model(ctx, case, evaluator.spec)
        cases.append(EvalCase(name=case["name"], inputs=case, evaluators=evaluators))
    return Dataset(name=ctx.suite_run.suite_name, cases=cases)


def _in_own_loop(coro_factory) -> Any:
    """Run a coroutine on a fresh event loop in a thread of its own (the caller may itself be inside one)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="eval-suite") as pool:
        return pool.submit(lambda: asyncio.run(coro_factory())).result()


def _finish(suite_run_id: Any, ctx: SuiteContext | None, error: str = "") -> None:
    suite_run = SuiteRun.objects.get(pk=suite_run_id)
    budget_hit = CaseResult.objects.filter(suite_run=suite_run).filter(
        run_status=RunStatus.BUDGET_EXCEEDED).exists() or bool(ctx and ctx.budget_stop)
    unfinished = CaseResult.objects.filter(suite_run=suite_run, status__in=[CaseResult.Status.PENDING,
                                                                            CaseResult.Status.RUNNING])
    reason = error or (ctx.budget_stop if ctx and ctx.budget_stop else "The suite run ended before this case ran.")
    unfinished.update(status=CaseResult.Status.SKIPPED if not error else CaseResult.Status.ERROR, reason=reason,
                      finished_at=timezone.now())
    suite_run.refresh_from_db()
    if error:
        status = SuiteRun.Status.ERROR
    elif budget_hit:
        status = SuiteRun.Status.BUDGET_STOPPED
    elif suite_run.failed == 0 and suite_run.skipped == 0:
        status = SuiteRun.Status.PASSED
    else:
        status = SuiteRun.Status.FAILED
    skipped = CaseResult.objects.filter(suite_run=suite_run, status=CaseResult.Status.SKIPPED).count()
    SuiteRun.objects.filter(pk=suite_run_id).update(status=status, error=error[:2000], finished_at=timezone.now(),
                                                    skipped=skipped)


def sweep_stale(now=None) -> int:
    """Suite runs still `running` long after their cases could have ended (their driver's worker died; a
    redelivered task finds the run taken and leaves it) end `error`, their unfinished cases with them."""
    now = now or timezone.now()
    ended = 0
    for suite_run in SuiteRun.objects.filter(status=SuiteRun.Status.RUNNING, started_at__isnull=False):
        rounds = -(-suite_run.total // max(1, suite_run.max_concurrent))
        started = suite_run.started_at or suite_run.created_at
        deadline = started + timedelta(seconds=(rounds + 1) * settings.EVAL_CASE_TIMEOUT_SECONDS)
        if now > deadline:
            _finish(suite_run.pk, None, error="The suite run stopped answering (its worker was lost).")
            ended += 1
    return ended


def run_suite(suite_run_id: Any) -> None:
    """Run a queued suite run to its end (a no-op for one already taken)."""
    suite_run = _claim(suite_run_id)
    if suite_run is None:
        return
    ctx = None
    try:
        spec = load_spec(suite_run.version.spec)
        ctx = SuiteContext(suite_run=suite_run, spec_budget=spec.budget.monthly_usd, tool_ids=_tool_ids(spec))
        dataset = _dataset(ctx)
        context = ctx

        async def evaluate():
            async def task(inputs: dict[str, Any]) -> checks_mod.CaseOutcome:
                return await run_case(context, inputs)

            return await dataset.evaluate(task, name=suite_run.suite_name, max_concurrency=suite_run.max_concurrent,
                                          progress=False, lifecycle=_recorder(context))

        _in_own_loop(evaluate)
    except Exception as exc:
        logger.exception("suite run %s failed", suite_run_id)
        _finish(suite_run_id, ctx, error=f"The suite run failed: {type(exc).__name__}.")
        return
    _finish(suite_run_id, ctx)
