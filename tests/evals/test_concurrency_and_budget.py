"""Cases run concurrently within EVAL_MAX_CONCURRENT; a budget used up mid-suite keeps what was spent and marks
the cases it stopped."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import Run, RunStatus
from evals.models import CaseResult, SuiteRun
from governance import budgets
from governance.models import SpendEntry
from tests.evals.conftest import make_agent, run_suite, suite_with
from tests.fakes.openai_server import Reply

pytestmark = pytest.mark.django_db(transaction=True)


def _cases(names, **fields):
    return [{"name": name, "prompt": f"[case:{name}] hi", "checks": [{"kind": "contains", "value": "ok"}], **fields}
            for name in names]


def test_cases_run_concurrently_but_never_more_than_the_bound(org, owner, scripted_openai, celery_worker, settings):
    settings.EVAL_MAX_CONCURRENT = 2
    agent, _version, _profile = make_agent(org, owner, scripted_openai)
    names = [f"c{i}" for i in range(5)]
    for name in names:
        scripted_openai.script(name, Reply.text(f"ok {name}"))
    scripted_openai.hold = 0.4  # every model request stays open a while, so overlapping ones are seen
    suite = suite_with(org, owner, agent, _cases(names))

    suite_run = run_suite(org, owner, suite)

    assert suite_run.max_concurrent == 2
    assert suite_run.status == SuiteRun.Status.PASSED and suite_run.passed == 5
    assert len(scripted_openai.chat_requests) == 5
    assert scripted_openai.peak <= 2


def test_a_budget_used_up_mid_suite_keeps_the_spend_and_marks_the_remaining_cases(org, owner, scripted_openai,
                                                                                  celery_worker, settings):
    settings.EVAL_MAX_CONCURRENT = 1  # one case at a time: the first one spends the whole budget
    agent, _version, _profile = make_agent(org, owner, scripted_openai, budget={"monthly_usd": "0.01"})
    scripted_openai.script("first", Reply.text("ok, that was expensive",
                                               usage={"prompt_tokens": 400_000, "completion_tokens": 100_000}))
    suite = suite_with(org, owner, agent, _cases(["first", "second", "third"]))

    suite_run = run_suite(org, owner, suite, target="1")

    first, second, third = suite_run.results.order_by("position")
    assert first.status == CaseResult.Status.PASSED and first.cost_usd > Decimal("0.01")
    assert [second.status, third.status] == [CaseResult.Status.SKIPPED] * 2
    assert "the agent's monthly budget" in second.reason and second.run_id is None and third.run_id is None
    assert suite_run.status == SuiteRun.Status.BUDGET_STOPPED and suite_run.skipped == 2
    # The spend stays in the ledger, counted against the agent and the organization; nothing else ran.
    run = Run.objects.get(pk=first.run_id)
    assert run.status == RunStatus.COMPLETED
    assert SpendEntry.objects.get(run=run).cost_usd == first.cost_usd == suite_run.cost_usd
    assert budgets.agent_spent(agent.pk) == first.cost_usd == budgets.organization_spent(org.pk)
    assert Run.objects.filter(agent=agent).count() == 1
    assert len(scripted_openai.chat_requests) == 1
