"""Gated tools park the run; approve / reject / re-park / resume on the parked version / expiry; ask_user."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agenticos.models import AuditEvent
from agents import services as agent_services
from agents.models import Message, Run, RunStatus, ToolCall
from agents.runner.finish import expire_approvals, expire_questions
from governance.models import Approval, Question
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import CHART_ARGS, run_now, start

pytestmark = pytest.mark.django_db(transaction=True)


def tool_returns(messages) -> list[ToolReturnPart]:
    return [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]


def two_charts_model(seen: list) -> FunctionModel:
    """Draws one chart; after its result, draws a second; then answers with what it saw."""

    async def stream(messages, info: AgentInfo):
        returns = tool_returns(messages)
        seen.append([str(r.content) for r in returns])
        if not returns:
            yield "First chart."
            yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="g1")}
        elif len(returns) == 1:
            yield "Second chart."
            yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="g2")}
        else:
            yield "All done."

    return FunctionModel(stream_function=stream, model_name="scripted")


@pytest.fixture
def gated_agent(org, owner):
    return publish(org, owner, capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])


def test_a_gated_call_parks_the_run_with_its_exact_arguments(org, owner, gated_agent, scripted_model):
    scripted_model(two_charts_model([]))
    agent, version = gated_agent
    run = start(org, owner, agent, version)

    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL
    approval = Approval.objects.get(run=run)
    assert approval.tool_id == "create_chart" and approval.status == "pending"
    assert approval.args == CHART_ARGS
    parked = [f for f in frames if f["type"] == "tool_approval_required"]
    assert parked and parked[0]["data"]["approval_id"] == str(approval.pk)
    assert frames[-1]["type"] == "complete" and frames[-1]["data"]["status"] == "awaiting_approval"
    assert [f["data"]["output"] for f in frames if f["type"] == "final_result"] == [""]
    assert ToolCall.objects.get(run=run).status == "parked"
    assert run.parked_state is not None


def test_approve_then_resume_continues_the_same_version_and_parks_again_on_a_second_gated_call(
    org, owner, admin_user, api_as, gated_agent, scripted_model
):
    seen: list = []
    scripted_model(two_charts_model(seen))
    agent, version = gated_agent
    run = start(org, owner, agent, version)
    run_now(run)
    # A new version is published while the run waits: the resume must stay on the parked one.
    agent_services.update_agent(actor=actor_of(owner, org), agent=agent, spec={**agent.draft_spec, "instructions": "v2"})
    agent_services.publish_agent(actor=actor_of(owner, org), agent=agent)

    approval = Approval.objects.get(run=run)
    client = api_as(admin_user, org)
    decided = client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve", "note": "ok"}, format="json")
    assert decided.status_code == 200 and decided.json()["status"] == "approved"
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "reject"}, format="json").status_code == 409
    assert AuditEvent.objects.filter(action="approval.approved", target_id=str(approval.pk)).exists()

    # The decision resumed the run: the client has nothing more to call.
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
    # A client that still resumes after deciding is not refused, and the run is not queued twice.
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    assert AuditEvent.objects.filter(action="run.resumed", target_id=str(run.pk)).count() == 1
    frames = run_now(run)

    run.refresh_from_db()
    assert run.version_id == version.pk
    assert run.status == RunStatus.AWAITING_APPROVAL  # the second chart is gated too
    assert Approval.objects.filter(run=run).count() == 2
    first = ToolCall.objects.get(run=run, tool_call_id="g1")
    assert first.status == "ok" and first.result is not None
    assert any(f["type"] == "tool_result" and f["data"]["tool_call_id"] == "g1" for f in frames)
    # The continuation is written without inventing a new user turn.
    assert Message.objects.filter(run=run, role="user").count() == 1


def test_a_rejection_reaches_the_model_as_refusal_text_and_the_run_goes_on(
    org, owner, admin_user, api_as, gated_agent, scripted_model
):
    seen: list = []
    scripted_model(two_charts_model(seen))
    agent, version = gated_agent
    run = start(org, owner, agent, version)
    run_now(run)
    approval = Approval.objects.get(run=run)
    api_as(admin_user, org).post(f"/api/v1/approvals/{approval.pk}", {"decision": "reject", "note": "not now"},
                                 format="json")
    run_now(run)
    assert any("rejected" in r and "not now" in r for r in seen[-1])
    assert ToolCall.objects.get(run=run, tool_call_id="g1").status == "error"


def two_charts_at_once_model() -> FunctionModel:
    """Asks for two charts in one response (two gated calls park together), then answers."""

    async def stream(messages, info: AgentInfo):
        if not tool_returns(messages):
            yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="p1"),
                   1: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="p2")}
        else:
            yield "Both decided."

    return FunctionModel(stream_function=stream, model_name="scripted")


def test_the_last_decision_through_the_api_resumes_the_run_and_an_earlier_one_does_not(
    org, owner, admin_user, api_as, gated_agent, scripted_model
):
    scripted_model(two_charts_at_once_model())
    agent, version = gated_agent
    run = start(org, owner, agent, version)
    run_now(run)
    first, second = Approval.objects.filter(run=run).order_by("tool_call_id")
    client = api_as(admin_user, org)

    assert client.post(f"/api/v1/approvals/{first.pk}", {"decision": "approve"}, format="json").status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL  # the second call still waits: nothing resumed
    assert not AuditEvent.objects.filter(action="run.resumed", target_id=str(run.pk)).exists()

    assert client.post(f"/api/v1/approvals/{second.pk}", {"decision": "reject"}, format="json").status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
    resumed = AuditEvent.objects.get(action="run.resumed", target_id=str(run.pk))
    assert resumed.actor_id == admin_user.pk

    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert dict(ToolCall.objects.filter(run=run).values_list("tool_call_id", "status")) == {"p1": "ok", "p2": "error"}


def test_resume_is_refused_while_a_decision_is_pending_and_deciding_needs_the_right(
    org, owner, member, admin_user, api_as, outsider, outsider_org, gated_agent, scripted_model
):
    scripted_model(two_charts_model([]))
    agent, version = gated_agent
    run = start(org, owner, agent, version)
    run_now(run)
    approval = Approval.objects.get(run=run)
    assert api_as(owner, org).post(f"/api/v1/runs/{run.pk}/resume").status_code == 409
    assert api_as(member, org).post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"},
                                    format="json").status_code == 403
    assert api_as(outsider, outsider_org).post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"},
                                               format="json").status_code == 404
    assert api_as(outsider, outsider_org).get("/api/v1/approvals").json()["results"] == []
    listed = api_as(admin_user, org).get("/api/v1/approvals?status=pending").json()["results"]
    assert [a["id"] for a in listed] == [str(approval.pk)]
    assert listed[0]["args"] == CHART_ARGS


def test_pending_approvals_expire_and_close_the_run_and_its_parked_step(org, owner, settings, gated_agent, scripted_model):
    scripted_model(two_charts_model([]))
    agent, version = gated_agent
    run = start(org, owner, agent, version)
    run_now(run)
    Approval.objects.filter(run=run).update(created_at=timezone.now() - timedelta(hours=settings.APPROVAL_EXPIRY_HOURS + 1))
    assert expire_approvals() == 1
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.error["type"] == "ApprovalExpired"
    assert Approval.objects.get(run=run).status == "expired"
    assert ToolCall.objects.get(run=run).status == "unfinished"


def ask_model(seen: list) -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        returns = tool_returns(messages)
        seen.append([str(r.content) for r in returns])
        names = {t.name for t in info.function_tools}
        tool = "ask_user_question" if "ask_user_question" in names else "ask_user"
        if not returns:
            yield "Let me ask."
            args = {"questions": [{"header": "Colour", "question": "Which colour?",
                                   "options": [{"label": "Red"}, {"label": "Blue"}]}]}
            yield {0: DeltaToolCall(name=tool, json_args=json.dumps(args), tool_call_id="q1")}
        else:
            yield f"Thanks: {returns[-1].content}"

    return FunctionModel(stream_function=stream, model_name="scripted")


def test_ask_user_parks_on_web_chat_and_the_answer_resumes_the_run(org, owner, member, api_as, scripted_model):
    seen: list = []
    scripted_model(ask_model(seen))
    agent, version = publish(org, owner, capabilities=[{"id": "ask_user"}])
    run = start(org, owner, agent, version, options={"can_ask_user": True})
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_ANSWER
    question = Question.objects.get(run=run)
    assert any(f["type"] == "ask_user" for f in frames)
    assert api_as(owner, org).get(f"/api/v1/runs/{run.pk}/questions").json()[0]["id"] == str(question.pk)
    # Only the person asked may answer.
    assert api_as(member, org).post(f"/api/v1/runs/{run.pk}/answers", {"answers": ["Red"]},
                                    format="json").status_code == 404
    assert api_as(owner, org).post(f"/api/v1/runs/{run.pk}/answers", {"answers": ["Red"]},
                                   format="json").status_code == 202
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert "Red" in run.output


def test_where_nobody_can_answer_ask_user_answers_at_once(org, owner, scripted_model):
    seen: list = []
    scripted_model(ask_model(seen))
    agent, version = publish(org, owner, capabilities=[{"id": "ask_user"}])
    run = start(org, owner, agent, version, options={"can_ask_user": False})
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert not Question.objects.filter(run=run).exists()
    assert "did not answer" in seen[-1][0].lower() or "no one" in seen[-1][0].lower() or "nobody" in seen[-1][0].lower()


def test_unanswered_questions_expire_and_cancel_the_run(org, owner, settings, scripted_model):
    scripted_model(ask_model([]))
    agent, version = publish(org, owner, capabilities=[{"id": "ask_user"}])
    run = start(org, owner, agent, version, options={"can_ask_user": True})
    run_now(run)
    Question.objects.filter(run=run).update(created_at=timezone.now() - timedelta(hours=settings.QUESTION_EXPIRY_HOURS + 1))
    assert expire_questions() == 1
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert Run.objects.get(pk=run.pk).error["type"] == "QuestionExpired"


def test_answers_must_fit_the_questions(org, owner, api_as, scripted_model):
    scripted_model(ask_model([]))
    agent, version = publish(org, owner, capabilities=[{"id": "ask_user"}])
    run = start(org, owner, agent, version, options={"can_ask_user": True})
    run_now(run)
    client = api_as(owner, org)
    assert client.post(f"/api/v1/runs/{run.pk}/answers", {"answers": ["Green"]}, format="json").status_code == 422
    assert client.post(f"/api/v1/runs/{run.pk}/answers", {"answers": [["Red", "Blue"]]},
                       format="json").status_code == 422
    response = client.post(f"/api/v1/runs/{run.pk}/answers", {"answers": [{"custom": "Teal, please"}]}, format="json")
    assert response.status_code == 202
    assert Question.objects.get(run=run).answers == {"Colour": ["Teal, please"]}


def test_a_gate_on_a_library_capabilitys_tool_parks_it_too(org, owner, scripted_model):
    seen: list = []
    scripted_model(ask_model(seen))
    agent, version = publish(org, owner, capabilities=[
        {"id": "ask_user", "tool_approval": {"ask_user_question": "required"}}])
    run = start(org, owner, agent, version, options={"can_ask_user": True})
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL
    assert Approval.objects.get(run=run).tool_id == "ask_user_question"
