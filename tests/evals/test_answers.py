"""A case answers its run's gated tools (approve / reject / leave parked) and ask_user, so nobody waits."""

from __future__ import annotations

import pytest

from agents.models import Run, RunStatus, ToolCall
from evals.models import CaseResult
from governance.models import Approval, Question
from tests.evals.conftest import make_agent, run_suite, suite_with
from tests.fakes.openai_server import Reply
from tests.runner.test_execute import CHART_ARGS

pytestmark = pytest.mark.django_db(transaction=True)

QUESTIONS = {"questions": [{"header": "Plan", "question": "Which plan?", "options": [{"label": "Pro"},
                                                                                    {"label": "Free"}]}]}


def _tool_messages(server, key: str) -> str:
    bodies = server.requests_for(key)
    return "\n".join(str(m.get("content")) for body in bodies for m in body["messages"] if m.get("role") == "tool")


def test_gated_tools_and_questions_are_answered_by_the_case(org, owner, scripted_openai, celery_worker):
    agent, _version, _profile = make_agent(org, owner, scripted_openai,
                                           capabilities=[{"id": "charts", "approval": "required"}, {"id": "ask_user"}])
    for key in ("approve", "reject"):
        scripted_openai.script(key, Reply.tool_call("create_chart", CHART_ARGS), Reply.text(f"Done ({key})."))
    scripted_openai.script("park", Reply.tool_call("create_chart", CHART_ARGS))
    scripted_openai.script("ask", Reply.tool_call("ask_user_question", QUESTIONS), Reply.text("You chose Pro."))
    suite = suite_with(org, owner, agent, [
        {"name": "approve", "prompt": "[case:approve] chart it", "approvals": {"create_chart": "approve"},
         "checks": [{"kind": "tool_called", "tool": "create_chart"}, {"kind": "status", "status": "completed"}]},
        {"name": "reject", "prompt": "[case:reject] chart it",  # the default answer: reject
         "checks": [{"kind": "status", "status": "completed"}]},
        {"name": "park", "prompt": "[case:park] chart it", "approvals": {"create_chart": "park"},
         "checks": [{"kind": "status", "status": "awaiting_approval"}]},
        {"name": "ask", "prompt": "[case:ask] pick a plan", "answers": {"Plan": ["Pro"]},
         "checks": [{"kind": "contains", "value": "Pro"}, {"kind": "tool_called", "tool": "ask_user_question"}]},
    ])

    suite_run = run_suite(org, owner, suite)

    results = {r.case_name: r for r in suite_run.results.all()}
    assert {name: r.status for name, r in results.items()} == dict.fromkeys(results, CaseResult.Status.PASSED), \
        {name: r.checks for name, r in results.items()}
    approved = Run.objects.get(pk=results["approve"].run_id)
    assert ToolCall.objects.get(run=approved).status == "ok"
    assert '"chart_type":"bar"' in _tool_messages(scripted_openai, "approve")  # the chart ran
    assert "A person rejected this call" in _tool_messages(scripted_openai, "reject")
    assert '"Pro"' in _tool_messages(scripted_openai, "ask")
    # Answered calls never reached anybody's approvals or questions.
    answered = [results[name].run_id for name in ("approve", "reject", "ask")]
    assert not Approval.objects.filter(run_id__in=answered).exists()
    assert not Question.objects.filter(run_id__in=answered).exists()
    # The parked case was recorded parked, then stopped: no approval is left waiting for a person.
    parked = Run.objects.get(pk=results["park"].run_id)
    assert results["park"].run_status == RunStatus.AWAITING_APPROVAL
    assert parked.status == RunStatus.CANCELLED
    assert not Approval.objects.filter(status=Approval.Status.PENDING).exists()
