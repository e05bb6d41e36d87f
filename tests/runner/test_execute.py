"""The runner end to end on real PostgreSQL: frames, transcript order, spend, failures, budgets."""

from __future__ import annotations

import json
import threading
from decimal import Decimal

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, TextPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import AgentVersion, Conversation, Message, Run, RunStatus, ToolCall
from agents.runner import execute
from agents.runner.frames import CollectingSink
from agents.runs import request_stop, start_run
from governance.models import SpendEntry
from tests import factories
from tests.runner.conftest import publish

pytestmark = pytest.mark.django_db(transaction=True)

CHART_ARGS = {
    "title": "Sales",
    "chart_type": "bar",
    "x_values": ["Q1", "Q2"],
    "series": [{"name": "2026", "values": [3, 5]}],
}


def _has_tool_return(messages) -> bool:
    last = messages[-1]
    return any(isinstance(p, ToolReturnPart) for p in getattr(last, "parts", []))


def chart_then_summary_model() -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        if _has_tool_return(messages):
            for word in ["Here", " is", " your", " chart."]:
                yield word
            return
        yield "Drawing"
        yield " it."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="call-1")}

    return FunctionModel(stream_function=stream, model_name="scripted")


def text_model(text: str, model_name: str = "scripted", calls: list | None = None) -> FunctionModel:
    """A model that streams `text` word by word (both the plain and the streamed path are scripted)."""

    def respond(messages, info):
        if calls is not None:
            calls.append(1)
        return ModelResponse(parts=[TextPart(text)])

    async def stream(messages, info):
        if calls is not None:
            calls.append(1)
        for i, word in enumerate(text.split(" ")):
            yield word if i == 0 else " " + word

    return FunctionModel(respond, stream_function=stream, model_name=model_name)


def start(org, user, agent, version, prompt="Chart my sales", conversation=True, **kw):
    conv = None
    if conversation:
        conv = Conversation.objects.create(organization=org, agent=agent, owner=user, title=prompt)
    return start_run(agent=agent, version=version, surface="web", prompt=prompt, user=user, acting_role="owner",
                     conversation=conv, enqueue=False, **kw)


def run_now(run) -> list[dict]:
    sink = CollectingSink()
    execute(run.pk, sink)
    return sink.frames


@pytest.fixture
def charts_agent(org, owner):
    return publish(org, owner, capabilities=[{"id": "charts"}])


def test_a_streamed_turn_sends_frames_in_order_and_records_parts_in_the_same_order(org, owner, charts_agent, scripted_model):
    scripted_model(chart_then_summary_model())
    agent, version = charts_agent
    run = start(org, owner, agent, version)

    frames = run_now(run)

    types = [f["type"] for f in frames]
    assert types[0] == "model_request_start"
    assert types[-1] == "complete"
    assert types.index("tool_call") < types.index("tool_result") < types.index("final_result")
    assert types.count("model_request_start") == 2
    streamed = "".join(f["data"]["content"] for f in frames if f["type"] == "text_delta")
    assert streamed == "Drawing it.Here is your chart."

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert run.output == "Here is your chart."
    assert run.input_tokens > 0 and run.output_tokens > 0
    answer = Message.objects.get(run=run, role="assistant")
    assert answer.parts == [
        {"type": "text", "text": "Drawing it."},
        {"type": "tool", "tool_call_id": "call-1"},
        {"type": "text", "text": "Here is your chart."},
    ]
    call = ToolCall.objects.get(run=run)
    assert call.tool_name == "create_chart" and call.status == "ok" and call.capability_id == "charts"
    assert call.args["x_values"] == ["Q1", "Q2"]
    assert call.message_id == answer.pk
    complete = frames[-1]["data"]
    assert complete["status"] == "completed"
    assert complete["usage"]["input_tokens"] == run.input_tokens


def test_the_transcript_records_what_the_person_wrote_not_the_assembled_prompt(org, owner, charts_agent, scripted_model):
    scripted_model(chart_then_summary_model())
    agent, version = charts_agent
    run = start(org, owner, agent, version, options={"extra_instructions": "PLACEMENT NOTE"})
    run_now(run)
    user_message = Message.objects.get(run=run, role="user")
    assert user_message.content == "Chart my sales"
    assert "PLACEMENT NOTE" not in json.dumps(list(Message.objects.values("content", "parts")))


def test_a_provider_failure_fails_the_run_but_keeps_its_transcript_and_spend(org, owner, charts_agent, scripted_model):
    async def stream(messages, info):
        if _has_tool_return(messages):
            raise ModelHTTPError(500, "scripted", body={"error": "boom at https://x.test/?key=sk-secret"})
        yield "Partial"
        yield " answer."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="c1")}

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    agent, version = charts_agent
    run = start(org, owner, agent, version)

    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert frames[-1]["type"] == "error"
    assert run.error["status"] == 500
    assert "sk-secret" not in json.dumps(run.error) and "key=" not in json.dumps(run.error)
    assert SpendEntry.objects.filter(run=run).count() == 1
    assert run.input_tokens > 0
    answer = Message.objects.get(run=run, role="assistant")
    assert answer.content == "Partial answer."
    assert [p["type"] for p in answer.parts] == ["text", "tool"]


def test_a_cancelled_run_keeps_what_it_streamed_and_spent(org, owner, charts_agent, scripted_model):
    started = threading.Event()

    async def stream(messages, info):
        import asyncio

        if _has_tool_return(messages):
            yield "Second"
            started.set()
            for _ in range(100):
                await asyncio.sleep(0.05)
                yield "."
            return
        yield "First."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id="c1")}

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    agent, version = charts_agent
    run = start(org, owner, agent, version)
    frames: list = []
    worker = threading.Thread(target=lambda: frames.extend(run_now(run)))
    worker.start()
    assert started.wait(10)
    request_stop(Run.objects.get(pk=run.pk))
    worker.join(20)

    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert frames[-1]["type"] == "error" and frames[-1]["data"]["code"] == "cancelled"
    assert SpendEntry.objects.filter(run=run).count() >= 1
    answer = Message.objects.get(run=run, role="assistant")
    assert answer.content.startswith("First.Second")


def test_an_exhausted_organization_budget_refuses_before_calling_the_model(org, owner, charts_agent, scripted_model):
    calls: list = []
    scripted_model(text_model("never", calls=calls))
    org.monthly_budget_usd = Decimal("1.00")
    org.save()
    agent, version = charts_agent
    SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("1.00"), surface="api")
    run = start(org, owner, agent, version)

    frames = run_now(run)

    run.refresh_from_db()
    assert calls == []
    assert run.status == RunStatus.BUDGET_EXCEEDED
    assert "organization's monthly budget" in run.error["message"]
    assert frames[-1]["type"] == "error" and "organization's monthly budget" in frames[-1]["data"]["message"]
    assert Message.objects.filter(run=run, role="user").exists()


def test_the_agents_own_cap_binds_before_the_organizations(org, owner, scripted_model):
    scripted_model(text_model("never"))
    agent, version = publish(org, owner, budget="0.50")
    SpendEntry.objects.create(organization=org, agent=agent, cost_usd=Decimal("0.50"))
    run = start(org, owner, agent, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.BUDGET_EXCEEDED
    assert "agent's monthly budget" in run.error["message"]


def test_spend_is_recorded_per_request_with_the_price_of_a_known_model(org, owner, scripted_model):
    scripted_model(text_model("hello there", model_name="gpt-4o"))
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    run_now(run)
    run.refresh_from_db()
    entry = SpendEntry.objects.get(run=run)
    assert entry.input_tokens > 0 and entry.output_tokens == 2
    assert entry.cost_usd > 0 and not entry.is_partial
    assert run.cost_usd == entry.cost_usd


def test_an_unpriced_model_marks_the_cost_partial(org, owner, scripted_model):
    scripted_model(text_model("hi", model_name="no-such-model-xyz"))
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert run.cost_is_partial is True


def test_the_offline_demo_model_answers_for_free_and_says_what_it_is(org, owner):
    agent, version = publish(org, owner, capabilities=[{"id": "charts"}])
    run = start(org, owner, agent, version, prompt="Please draw a chart of my numbers")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.cost_usd == 0 and not run.cost_is_partial
    assert "demo" in run.output.lower()
    assert any(f["type"] == "tool_call" and f["data"]["tool_name"] == "create_chart" for f in frames)
    assert len([f for f in frames if f["type"] == "text_delta"]) > 3  # word by word


def test_running_the_same_run_twice_is_a_no_op(org, owner, scripted_model):
    scripted_model(text_model("once"))
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    run_now(run)
    assert run_now(run) == []
    assert SpendEntry.objects.filter(run=run).count() == 1


def test_a_stale_running_run_goes_back_to_the_queue_and_one_lost_too_often_fails(org, owner, settings,
                                                                                monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from agents.runner.finish import sweep_stale_runs

    enqueued: list = []
    monkeypatch.setattr("agents.runs.enqueue_run", enqueued.append)
    settings.RUN_MAX_RESUMES = 2
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    beaten = timezone.now() - timedelta(hours=2)
    Run.objects.filter(pk=run.pk).update(status="running", heartbeat_at=beaten, worker="gone:1")
    doomed = start(org, owner, agent, version)
    Run.objects.filter(pk=doomed.pk).update(status="running", heartbeat_at=beaten, events=[
        {"type": "run_interrupted"}, {"type": "run_resumed"}, {"type": "run_interrupted"}, {"type": "run_resumed"}])
    fresh = start(org, owner, agent, version)
    Run.objects.filter(pk=fresh.pk).update(status="running", heartbeat_at=timezone.now())
    assert sweep_stale_runs() == 2
    run.refresh_from_db()
    doomed.refresh_from_db()
    fresh.refresh_from_db()
    assert run.status == "queued" and enqueued == [run.pk]
    assert [e["type"] for e in run.events] == ["run_interrupted"]
    assert run.events[0]["worker"] == "gone:1" and run.events[0]["last_heartbeat"] == beaten.isoformat()
    assert doomed.status == "failed" and doomed.error["type"] == "WorkerLost"
    assert fresh.status == "running"
    # Taken again by a worker: it records who took it over.
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == "completed" and frames[0]["type"] == "resumed"
    assert [e["type"] for e in run.events] == ["run_interrupted", "run_resumed"]
    assert run.events[1]["from_step"] == 0 and run.events[1]["waited_seconds"] >= 7200


def test_a_run_never_reaches_another_organizations_model_profile(org, owner, outsider_org):
    """The runner reads the model profile through the run's organization: a version naming another tenant's
    profile (and so its key) fails to assemble, says why, and spends nothing."""
    agent, version = publish(org, owner)
    foreign = factories.model_profile(outsider_org, "openai", "gpt-4o-mini", api_key="sk-outsider-key-1234567890")
    forged = AgentVersion.objects.create(agent=agent, number=version.number + 1, published_by=owner,
                                         spec={**version.spec, "model_profile_id": str(foreign.pk)})
    run = start(org, owner, agent, forged)
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error["type"] == "AssemblyError" and "model profile" in run.error["message"]
    assert frames[-1]["type"] == "error" and "sk-outsider" not in json.dumps(frames)
    assert not SpendEntry.objects.filter(run=run).exists() and run.requests == 0


def test_a_run_lost_in_the_queue_is_enqueued_again_and_an_ancient_one_fails(org, owner, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from agents.runner.finish import requeue_lost_runs

    enqueued: list = []
    monkeypatch.setattr("agents.runs.enqueue_run", lambda run_id: enqueued.append(run_id))
    agent, version = publish(org, owner)
    lost = start(org, owner, agent, version)
    Run.objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    ancient = start(org, owner, agent, version)
    Run.objects.filter(pk=ancient.pk).update(created_at=timezone.now() - timedelta(days=2))
    fresh = start(org, owner, agent, version)
    assert requeue_lost_runs() == 1
    assert enqueued == [lost.pk]
    assert Run.objects.get(pk=ancient.pk).status == "failed"
    assert Run.objects.get(pk=fresh.pk).status == "queued"
