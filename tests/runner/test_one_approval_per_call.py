"""One pending approval per call: a model that asks for the same gated call on every turn of a conversation
(its history holds what was said, not the waiting call) gets one approval, not one per message."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run, RunStatus
from agents.runner.gate import ALREADY_WAITING
from governance.models import Approval
from tests.runner.conftest import publish
from tests.runner.test_execute import CHART_ARGS, run_now, start

pytestmark = pytest.mark.django_db(transaction=True)


def stubborn_model(args_of_turn: list[dict], seen: list[str]) -> FunctionModel:
    """Calls create_chart with `args_of_turn[-1]` on every turn, whatever it is told; answers with what the
    tool returned."""

    async def stream(messages, info: AgentInfo):
        returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        if returns and isinstance(messages[-1], ModelRequest) and any(
                isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            seen.append(str(returns[-1].content))
            yield "Noted."
            return
        args = args_of_turn[-1]
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(args), tool_call_id=f"c{len(seen)}")}

    return FunctionModel(stream_function=stream, model_name="stubborn")


@pytest.fixture
def gated_agent(org, owner):
    return publish(org, owner, capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])


def test_the_same_call_asked_again_in_the_conversation_is_not_parked_twice(org, owner, gated_agent, scripted_model):
    seen: list[str] = []
    asked = [CHART_ARGS]
    scripted_model(stubborn_model(asked, seen))
    agent, version = gated_agent
    first = start(org, owner, agent, version)
    run_now(first)
    first.refresh_from_db()
    assert first.status == RunStatus.AWAITING_APPROVAL and Approval.objects.count() == 1

    # The next message of the same conversation: the model asks for the very same call.
    second = Run.objects.get(pk=start(org, owner, agent, version, conversation=False).pk)
    Run.objects.filter(pk=second.pk).update(conversation=first.conversation)
    run_now(second)
    second.refresh_from_db()
    assert second.status == RunStatus.COMPLETED and second.output == "Noted."
    assert seen == [ALREADY_WAITING]  # the model read that it waits, the tool did not run
    assert Approval.objects.count() == 1 and Approval.objects.get().run_id == first.pk

    # A different call is a new request for a decision: it parks as ever.
    asked.append({**CHART_ARGS, "title": "Another chart"})
    third = start(org, owner, agent, version, conversation=False)
    Run.objects.filter(pk=third.pk).update(conversation=first.conversation)
    run_now(third)
    third.refresh_from_db()
    assert third.status == RunStatus.AWAITING_APPROVAL
    assert Approval.objects.filter(status="pending").count() == 2


def test_another_conversations_waiting_call_does_not_count(org, owner, gated_agent, scripted_model):
    seen: list[str] = []
    scripted_model(stubborn_model([CHART_ARGS], seen))
    agent, version = gated_agent
    run_now(start(org, owner, agent, version))
    elsewhere = start(org, owner, agent, version)  # a conversation of its own
    run_now(elsewhere)
    elsewhere.refresh_from_db()
    assert elsewhere.status == RunStatus.AWAITING_APPROVAL and Approval.objects.count() == 2 and seen == []
