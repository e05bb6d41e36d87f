"""A gated tool inside a delegate: a sync delegation parks the run and the approval resumes that delegate in
place (not a new delegation); a background delegation refuses the call and tells the model to use sync."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ToolReturnPart

from agents.models import Run, RunStatus
from governance.models import Approval, SpendEntry
from governance.services import decide_approval
from tests.capabilities.test_subagents import Team, _pair, call, returns
from tests.runner.conftest import actor_of
from tests.runner.test_execute import CHART_ARGS, run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

GATED = {"capabilities": [{"id": "charts", "tool_approval": {"create_chart": "required"}}]}
LEAD, RESEARCHER = "You are the lead.", "You are the researcher."


@pytest.fixture
def demo_profile(org):
    from tests import factories

    return factories.model_profile(org, label="Team")


def _resume(run) -> list[dict]:
    Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED)
    return run_now(run)


def test_an_approval_inside_a_sync_delegate_parks_the_run_and_resumes_that_delegate_in_place(
        org, owner, admin_user, demo_profile, scripted_model):
    team = Team()
    scripted_model(team.model())
    team.role(LEAD, call("task", {"description": "Chart the sales.", "subagent_type": "researcher"}),
              lambda m: "Lead says: " + str(returns(m)[-1]))
    team.role(RESEARCHER, call("create_chart", CHART_ARGS), "Chart drawn.")
    researcher, lead, version = _pair(org, owner, demo_profile, delegate_spec=GATED)
    run = start(org, owner, lead, version, prompt="chart")

    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL, run.error
    approval = Approval.objects.get(run=run)
    # The person approves the call the delegate made, with its exact arguments — not `task`.
    assert (approval.tool_name, approval.tool_id, approval.capability_id) == ("create_chart", "create_chart", "charts")
    assert approval.args == CHART_ARGS and approval.tool_call_id == "task-0"
    started = next(f["data"] for f in frames if f["type"] == "subagent_started")
    parked = run.parked_state["delegations"]["task-0"]
    assert parked["task_id"] == started["task_id"] and parked["name"] == "researcher"
    closed = next(f["data"] for f in frames if f["type"] == "subagent_finished")
    assert closed["status"] == "awaiting_approval"
    asked = next(f["data"] for f in frames if f["type"] == "tool_approval_required")
    assert asked["tool_name"] == "create_chart" and asked["args"] == CHART_ARGS
    assert len(team.seen[RESEARCHER]) == 1 and len(team.seen[LEAD]) == 1

    decide_approval(actor=actor_of(admin_user, org), approval=approval, decision="approve")
    resumed = _resume(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == "Lead says: Chart drawn."
    # In place: the researcher went on from its own history with the chart's result; nobody delegated again.
    assert len(team.seen[LEAD]) == 2 and len(team.seen[RESEARCHER]) == 2
    continued = team.seen[RESEARCHER][1][0]
    assert any(isinstance(p, ToolReturnPart) and p.tool_name == "create_chart"
               for m in continued for p in getattr(m, "parts", []))
    again = next(f["data"] for f in resumed if f["type"] == "subagent_started")
    assert again["task_id"] == started["task_id"]  # the same panel, not a second one
    assert next(f["data"] for f in resumed if f["type"] == "subagent_finished")["status"] == "completed"
    assert SpendEntry.objects.filter(run=run, agent=researcher).count() == 2
    assert Run.objects.count() == 1


def test_a_rejected_delegate_call_is_not_run_and_the_lead_is_told(org, owner, admin_user, demo_profile,
                                                                   scripted_model):
    team = Team()
    scripted_model(team.model())
    team.role(LEAD, call("task", {"description": "Chart the sales.", "subagent_type": "researcher"}),
              lambda m: "Lead read: " + str(returns(m)[-1]))
    team.role(RESEARCHER, call("create_chart", CHART_ARGS), "should not be reached")
    _r, lead, version = _pair(org, owner, demo_profile, delegate_spec=GATED)
    run = start(org, owner, lead, version, prompt="chart")
    run_now(run)
    decide_approval(actor=actor_of(admin_user, org), approval=Approval.objects.get(run=run), decision="reject")
    _resume(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert "rejected" in run.output
    assert len(team.seen[RESEARCHER]) == 1


def test_a_background_delegate_refuses_a_gated_call_and_says_to_delegate_it_sync(org, owner, demo_profile,
                                                                                   scripted_model):
    team = Team()
    scripted_model(team.model())

    def wait(m):
        ids = [r.split("Task ID: ")[1].split("\n")[0] for r in returns(m) if isinstance(r, str) and "Task ID:" in r]
        return call("wait_tasks", {"task_ids": ids, "timeout": 20}, 1)

    team.role(LEAD, call("task", {"description": "Chart the sales.", "subagent_type": "researcher"}), wait,
              "done")
    team.role(RESEARCHER, call("create_chart", CHART_ARGS), lambda m: "refused: " + str(returns(m)[-1]))
    _r, lead, version = _pair(org, owner, demo_profile, config={"mode": "async"}, delegate_spec=GATED)
    run = start(org, owner, lead, version, prompt="chart")
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert not Approval.objects.filter(run=run).exists()
    waited = returns(team.seen[LEAD][2][0])[-1]
    assert 'mode="sync"' in waited and "COMPLETED" in waited


def test_a_sync_delegates_question_goes_to_the_person_and_the_answer_resumes_it_in_place(org, owner, demo_profile,
                                                                                        scripted_model):
    from governance.models import Question

    team = Team()
    scripted_model(team.model())
    team.role(LEAD, call("task", {"description": "When was it founded?", "subagent_type": "researcher"}),
              lambda m: "Lead: " + str(returns(m)[-1]).split("\n\nChat Trace ID")[0])
    team.role(RESEARCHER, call("ask_parent", {"question": "Which company do you mean?"}),
              lambda m: "Founded by " + str(returns(m)[-1]))
    _r, lead, version = _pair(org, owner, demo_profile, config={"allow_questions": True})
    run = start(org, owner, lead, version, prompt="founded?", options={"can_ask_user": True})

    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_ANSWER, run.error
    question = Question.objects.get(run=run)
    assert question.asked_user_id == owner.pk and question.tool_call_id == "task-0"
    assert question.questions == [{"header": "researcher", "question": "Which company do you mean?",
                                   "options": [], "multi_select": False}]
    assert any(f["type"] == "ask_user" for f in frames)
    assert "ask_parent" in {t.name for t in team.seen[RESEARCHER][0][1].function_tools}

    Question.objects.filter(pk=question.pk).update(status=Question.Status.ANSWERED, answers={"researcher": ["Acme"]})
    _resume(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == "Lead: Founded by Acme"
    assert len(team.seen[LEAD]) == 2 and len(team.seen[RESEARCHER]) == 2  # resumed, not delegated again


def test_where_nobody_can_answer_a_delegates_question_is_answered_at_once_and_nothing_parks(
        org, owner, demo_profile, scripted_model):
    team = Team()
    scripted_model(team.model())
    team.role(LEAD, call("task", {"description": "When was it founded?", "subagent_type": "researcher"}),
              lambda m: "Lead: " + str(returns(m)[-1]).split("\n\nChat Trace ID")[0])
    team.role(RESEARCHER, call("ask_parent", {"question": "Which company?"}), lambda m: str(returns(m)[-1]))
    _r, lead, version = _pair(org, owner, demo_profile, config={"allow_questions": True})
    from agents.runs import start_run

    run = start_run(agent=lead, version=version, surface="api", prompt="founded?", user=owner, acting_role="owner",
                    enqueue=False)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert run.output.startswith("Lead: Nobody can answer questions here")


def test_a_specialist_written_before_a_park_is_still_known_after_the_approval(org, owner, admin_user, demo_profile,
                                                                             scripted_model):
    from tests.capabilities.test_subagents import _publish

    team = Team()
    scripted_model(team.model())
    team.role(LEAD,
              call("create_agent", {"name": "translator", "description": "Translates", "model": "Team",
                                    "instructions": "You are a translator."}),
              call("create_chart", CHART_ARGS, 1),
              call("task", {"description": "Translate 'hello'.", "subagent_type": "translator"}, 2),
              lambda m: "Lead: " + str(returns(m)[-1]).split("\n\nChat Trace ID")[0])
    team.role("You are a translator.", "hola")
    lead, version = _publish(org, owner, {
        "instructions": "You are the lead.", "model_profile_id": str(demo_profile.pk),
        "capabilities": [{"id": "subagents", "config": {"allow_dynamic": True}},
                         {"id": "charts", "tool_approval": {"create_chart": "required"}}],
    }, name="Writer lead")
    run = start(org, owner, lead, version, prompt="translate")
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL, run.error
    assert [s["name"] for s in run.parked_state["dynamic_specialists"]] == ["translator"]

    decide_approval(actor=actor_of(admin_user, org), approval=Approval.objects.get(run=run), decision="approve")
    _resume(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == "Lead: hola"
