"""Every check kind, passing and failing, on cases run through the one runner and the real OpenAI client."""

from __future__ import annotations

import json

import pytest

from agents.models import Run, RunStatus, ToolCall
from evals.models import CaseResult, SuiteRun
from governance.models import SpendEntry
from tests.evals.conftest import KEY, judge_says, make_agent, openai_profile, run_suite, suite_with
from tests.fakes.openai_server import Reply
from tests.runner.test_execute import CHART_ARGS

pytestmark = pytest.mark.django_db(transaction=True)

LINE_ARGS = {**CHART_ARGS, "chart_type": "line"}
# Big token counts, so the priced model costs more than the max_cost bound of the failing case.
HEAVY = {"prompt_tokens": 200_000, "completion_tokens": 100_000}


def every_check(judge_profile_id: str, *, passing: bool) -> list[dict]:
    return [
        {"kind": "contains", "value": "CHART"},  # case-insensitive by default
        {"kind": "not_contains", "value": "error"},
        {"kind": "regex", "pattern": r"Q\d"},
        {"kind": "equals", "value": "Here is the chart for Q1."},
        {"kind": "tool_called", "tool": "create_chart", "args": {"chart_type": "bar"}},
        {"kind": "tool_not_called", "tool": "create_chart" if not passing else "ask_user_question"},
        {"kind": "status", "status": "completed" if passing else "awaiting_approval"},
        {"kind": "max_cost", "usd": "5" if passing else "0.0001"},
        {"kind": "max_steps", "steps": 3 if passing else 1},
        {"kind": "judge", "rubric": "The answer offers a chart.", "model_profile_id": judge_profile_id},
    ]


def test_every_check_kind_passes_and_fails_through_the_real_openai_client(org, owner, scripted_openai,
                                                                          celery_worker):
    agent, _version, _profile = make_agent(org, owner, scripted_openai, capabilities=[{"id": "charts"}])
    judge = openai_profile(org, scripted_openai, label="Judge")
    scripted_openai.script("good", Reply.tool_call("create_chart", CHART_ARGS), Reply.text("Here is the chart for Q1."))
    scripted_openai.script("judge:good", judge_says(True, "It offers a chart."))
    scripted_openai.script("bad", Reply.tool_call("create_chart", LINE_ARGS),
                           Reply.text("An error occurred.", usage=HEAVY))
    scripted_openai.script("judge:bad", judge_says(False, "No chart is offered."))
    suite = suite_with(org, owner, agent, [
        {"name": "good", "prompt": "[case:good] Chart my sales", "checks": every_check(str(judge.pk), passing=True)},
        {"name": "bad", "prompt": "[case:bad] Chart my sales", "checks": every_check(str(judge.pk), passing=False)},
    ])

    suite_run = run_suite(org, owner, suite, target="1")

    good = CaseResult.objects.get(suite_run=suite_run, case_name="good")
    bad = CaseResult.objects.get(suite_run=suite_run, case_name="bad")
    assert [c["passed"] for c in good.checks] == [True] * 10, good.checks
    assert good.status == CaseResult.Status.PASSED and good.run_status == RunStatus.COMPLETED
    # The failing case fails every one of its checks, each with a reason.
    assert [c["passed"] for c in bad.checks] == [False] * 10, bad.checks
    assert all(c["reason"] for c in bad.checks)
    assert bad.status == CaseResult.Status.FAILED
    assert "not 'Here is the chart for Q1.'" in bad.checks[3]["reason"]
    assert "never with {'chart_type': 'bar'}" in bad.checks[4]["reason"]
    assert bad.checks[9]["reason"] == "No chart is offered."
    assert suite_run.status == SuiteRun.Status.FAILED and (suite_run.passed, suite_run.failed) == (1, 1)

    # Each case was a real run on the eval surface, with its transcript, tokens, cost and duration kept.
    run = Run.objects.get(pk=good.run_id)
    assert run.surface == "eval" and run.status == RunStatus.COMPLETED and run.version.number == 1
    assert ToolCall.objects.get(run=run).status == "ok"
    assert good.steps == 2 and good.input_tokens > 0 and good.duration_ms is not None
    assert bad.cost_usd > 0 and bad.cost_usd == Run.objects.get(pk=bad.run_id).cost_usd
    # The judge's requests were metered like any model request: in the ledger, against the agent.
    judged = SpendEntry.objects.filter(agent=agent, kind="eval_judge", surface="eval")
    assert judged.count() == 2
    assert sum(e.cost_usd for e in judged) == good.judge_cost_usd + bad.judge_cost_usd
    assert suite_run.cost_usd == sum(r.cost_usd + r.judge_cost_usd for r in suite_run.results.all())
    # The judge saw the answer and the prompt, never the provider key.
    judge_body = json.dumps(scripted_openai.requests_for("judge:good"))
    assert "Here is the chart for Q1." in judge_body and "Chart my sales" in judge_body
    assert KEY not in judge_body and all(r.bearer == KEY for r in scripted_openai.chat_requests)
