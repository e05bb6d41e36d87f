"""Twenty runs racing a nearly spent cap; the next turn's history reads the newest N of a long thread."""

from __future__ import annotations

import json
import threading
from decimal import Decimal

import pytest
from django.db.models import Sum
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

from agents.models import Conversation, Message, RunStatus
from agents.runner.history import get_recent_messages, to_model_messages
from governance.models import SpendEntry
from tests.runner.conftest import publish
from tests.runner.test_execute import CHART_ARGS, run_now, start


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_runs_overshoot_a_nearly_spent_cap_by_at_most_the_requests_in_flight(
    org, owner, scripted_model
):
    async def stream(messages, info):
        if any(isinstance(p, ToolReturnPart) for p in getattr(messages[-1], "parts", [])):
            yield "done"
            return
        yield "charting"
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="c")}

    scripted_model(FunctionModel(stream_function=stream, model_name="gpt-4o"))
    agent, version = publish(org, owner, capabilities=[{"id": "charts"}])
    runs = [start(org, owner, agent, version, prompt=f"run {i}") for i in range(20)]
    # Price one request, then leave room for about five more.
    probe = start(org, owner, agent, version, prompt="probe")
    run_now(probe)
    per_request = SpendEntry.objects.filter(run=probe).order_by("id").first().cost_usd
    org.monthly_budget_usd = SpendEntry.objects.aggregate(t=Sum("cost_usd"))["t"] + per_request * 5
    org.save()

    threads = [threading.Thread(target=run_now, args=(run,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    spent = SpendEntry.objects.aggregate(t=Sum("cost_usd"))["t"]
    overshoot = spent - org.monthly_budget_usd
    # Every request that passed the check before the cap was reached may still land — never more.
    assert overshoot <= per_request * 20
    statuses = [r.status for r in type(runs[0]).objects.filter(pk__in=[r.pk for r in runs])]
    assert RunStatus.BUDGET_EXCEEDED in statuses
    assert all(s in (RunStatus.COMPLETED, RunStatus.BUDGET_EXCEEDED) for s in statuses)
    # Refused runs still record their transcript: the person's words are there.
    assert Message.objects.filter(role="user", run__status=RunStatus.BUDGET_EXCEEDED).exists()
    assert per_request > Decimal("0")


@pytest.mark.django_db
def test_history_reads_the_newest_turns_of_a_500_turn_conversation(org, owner):
    agent, _ = publish(org, owner)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner)
    Message.objects.bulk_create(
        Message(conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=f"turn {i}")
        for i in range(500)
    )
    recent = get_recent_messages(conversation, 40)
    assert [m.content for m in recent] == [f"turn {i}" for i in range(460, 500)]
    history = to_model_messages(recent)
    assert len(history) == 40
    assert history[-1].parts[0].content == "turn 499"
    before = get_recent_messages(conversation, 3, before_id=recent[-1].pk)
    assert [m.content for m in before] == ["turn 496", "turn 497", "turn 498"]


@pytest.mark.django_db
def test_the_ledger_is_asked_only_when_a_cap_can_bind(org, owner, django_assert_num_queries):
    """No agent cap, no organization cap, no embed: nothing is metered, so no query is made before a model
    request. Any one cap brings the check back."""
    from governance import budgets

    org.monthly_budget_usd = None
    with django_assert_num_queries(0):
        assert budgets.caps_for(organization=org, agent_id=None, agent_budget=None) == []
    assert not budgets.may_bind(organization=org, agent_budget=None)
    assert budgets.may_bind(organization=org, agent_budget=Decimal("5"))
    assert budgets.may_bind(organization=org, agent_budget=None, embed_id="e")
    org.monthly_budget_usd = Decimal("10")
    caps = budgets.caps_for(organization=org, agent_id=None, agent_budget=None)
    assert [(cap.label, cap.limit) for cap in caps] == [("the organization's monthly budget", Decimal("10"))]
