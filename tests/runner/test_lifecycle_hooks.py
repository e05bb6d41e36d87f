"""A capability takes part in a run through its lifecycle hooks (capabilities/lifecycle.py), and the runner names
none: a capability registered here, bound by no agent, is called at each turning point of real runs — park with
what it keeps, resume with what it restores, the answer, the failure — and its publish check refuses a draft."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models.function import FunctionModel

from agenticos.errors import Invalid
from agents import extensions
from agents import services as agent_services
from agents.models import Message, Run, RunStatus
from capabilities import lifecycle, registry
from capabilities.base import Capability
from capabilities.lifecycle import RunHooks
from governance.models import Approval
from tests.runner.conftest import actor_of, publish
from tests.runner.test_approvals import two_charts_model
from tests.runner.test_execute import run_now, start, text_model

pytestmark = pytest.mark.django_db(transaction=True)


class Probe:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_resume(self, run, scratch):
        self.calls.append(("on_resume", run.pk))
        scratch["probe"] = "resumed"

    def restore_history(self, run, stored):
        self.calls.append(("restore_history", run.parked_state.get("probe")))
        return stored

    def on_park(self, handle, tree):
        self.calls.append(("on_park", handle.run.pk, len(tree)))
        return tree, {"probe": "kept with the park"}

    def keep_history(self, handle, messages, message_id):
        self.calls.append(("keep_history", message_id, handle.deps.scratch.get("probe"), bool(messages)))

    def after_answer(self, handle, message_id):
        self.calls.append(("after_answer", message_id))

    def on_interrupted(self, run, calls):
        self.calls.append(("on_interrupted", run.pk, sorted(c.tool_call_id for c in calls)))

    def on_failed(self, run):
        self.calls.append(("on_failed", run.pk))

    def publish_problems(self, actor, data, format_path):
        if "FORBIDDEN WORD" in data.get("instructions", ""):
            return [{"field": "instructions", "message": "The probe refuses this draft."}]
        return []


@pytest.fixture
def probe():
    found = Probe()
    hooks = RunHooks(**{name: getattr(found, name) for name in RunHooks.__dataclass_fields__})
    registry.register(Capability(id="probe_hooks", name="Probe", category="utility", description="A test probe.",
                                 tools=(), build=lambda ctx: [], tools_note="A test probe.", selectable=False,
                                 hooks=hooks))
    yield found
    registry.unregister("probe_hooks")


def test_an_answered_run_calls_keep_history_then_after_answer_with_the_answer(org, owner, probe, scripted_model):
    scripted_model(text_model("Hello there."))
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    run_now(run)
    answer = Message.objects.get(run=run, role="assistant")
    assert probe.calls == [("keep_history", answer.pk, None, True), ("after_answer", answer.pk)]


def test_a_failed_run_calls_on_failed_and_no_answer_hook(org, owner, probe, scripted_model):
    async def stream(messages, info):
        raise ModelHTTPError(500, "scripted", body={"error": "down"})
        yield ""  # pragma: no cover - a generator

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert probe.calls == [("on_failed", run.pk)]


def test_a_park_keeps_what_the_hook_adds_and_the_resume_gets_it_back(org, owner, admin_user, api_as, probe,
                                                                      scripted_model):
    scripted_model(two_charts_model([]))
    agent, version = publish(org, owner, capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}])
    run = start(org, owner, agent, version)
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_APPROVAL
    assert run.parked_state["probe"] == "kept with the park"
    assert [call[0] for call in probe.calls] == ["on_park"] and probe.calls[0][1] == run.pk

    probe.calls.clear()
    approval = Approval.objects.get(run=run)
    client = api_as(admin_user, org)
    assert client.post(f"/api/v1/approvals/{approval.pk}", {"decision": "approve"}, format="json").status_code == 200
    assert client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 202
    run_now(run)
    names = [call[0] for call in probe.calls]
    # Resumed (scratch set before the build, the parked history restored), then parked again on the second chart.
    assert names == ["on_resume", "restore_history", "on_park"]
    assert probe.calls[1] == ("restore_history", "kept with the park")


def test_a_capability_publish_check_refuses_the_draft(org, owner, probe):
    agent, _version = publish(org, owner)
    actor = actor_of(owner, org)
    agent_services.update_agent(actor=actor, agent=agent,
                                spec={**agent.draft_spec, "instructions": "Say the FORBIDDEN WORD."})
    with pytest.raises(Invalid) as refused:
        agent_services.publish_agent(actor=actor, agent=agent)
    assert "The probe refuses this draft." in json.dumps(refused.value.details, default=str)


def test_the_built_in_hooks_and_the_surfaces_registrations_are_in_place():
    by_capability = {cap.id: {name for name in RunHooks.__dataclass_fields__ if getattr(cap.hooks, name)}
                     for cap in registry.all_capabilities() if cap.hooks != lifecycle.NO_HOOKS}
    assert by_capability == {
        "compaction": {"on_resume", "on_park", "keep_history"},
        "media": {"on_park", "restore_history"},
        "follow_ups": {"after_answer"},
        "planning": {"on_failed"},
        "subagents": {"on_park", "publish_problems"},
        "coding_agent": {"publish_problems", "on_interrupted"},
        "web_research": {"publish_problems"},
        "tool_search": {"publish_problems"},
        "web_fetch": {"publish_problems"},
        "browser_use": {"publish_problems"},
        "thinking": {"publish_problems"},
    }
    # evals plugs its publish gate and its cases' answers into agents (which never imports evals).
    from evals import answers
    from evals.apps import check_publish_gate

    assert extensions.PUBLISH_GATES["evaluation_suites"] is check_publish_gate
    assert extensions.deferred_answerer("eval").answer is answers.answer_for_case
    # A replay's run answers its tool calls from the recording; its copies follow the transcript period.
    from evals import replay_tools, replays
    from governance import retention

    assert extensions.RUN_CAPABILITIES["replay_tools"] is replay_tools.run_capabilities
    assert retention.SWEEPS["replay_results"] is replays.sweep_expired
    # channelbots posts follow-ups in its threads (capabilities never import a surface).
    from capabilities.follow_ups.service import CHAT_APP_POSTERS
    from channelbots import follow_ups

    assert CHAT_APP_POSTERS == {surface: follow_ups.post for surface in ("slack", "telegram", "mattermost")}
    from capabilities.channel_tools import access
    from channelbots.channel_access import channel_of_run
    from channelbots.platforms import PlatformError

    assert access.current().channel_of_run is channel_of_run and access.current().error is PlatformError
    # The runner lends the layers below it how a model profile becomes a model (a delegate's) and how a resumed
    # run reaches a worker (governance), registered in agents' ready(): neither imports the runner.
    from agents import run_handle, runs
    from agents.runner import assembly

    assert run_handle.model_source() is assembly
    assert run_handle._run_delivery is runs.deliver_after_commit
    assert Run.objects.count() == 0


def test_resuming_after_a_lost_worker_hands_the_calls_it_left_in_flight_to_on_interrupted(org, owner, probe):
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, UserPromptPart

    from agents.models import ToolCall
    from agents.runner import checkpoint

    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    messages = [ModelRequest(parts=[UserPromptPart("Refactor and look it up")]),
                ModelResponse(parts=[ToolCallPart("run_coding_agent", {"task": "Refactor"}, "call-cut"),
                                     ToolCallPart("look_up", {}, "call-done"),
                                     ToolCallPart("send_mail", {}, "call-unstarted")])]
    ToolCall.objects.create(run=run, tool_call_id="call-cut", tool_name="run_coding_agent",
                            status=ToolCall.Status.RUNNING)
    ToolCall.objects.create(run=run, tool_call_id="call-done", tool_name="look_up", status=ToolCall.Status.OK,
                            result="found")

    results = checkpoint.resume_results(run, messages, frozenset(), None)

    # Only the call whose worker died in it is handed over: not the finished one, not the one never started.
    assert [c for c in probe.calls if c[0] == "on_interrupted"] == [("on_interrupted", run.pk, ["call-cut"])]
    assert isinstance(results.calls["call-cut"], ToolFailed) and "interrupted" in str(results.calls["call-cut"])
    assert results.calls["call-done"] == "found"


def test_an_on_interrupted_hook_that_raises_does_not_stop_the_resumption(org, owner, probe, monkeypatch):
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, UserPromptPart

    from agents.models import ToolCall
    from agents.runner import checkpoint

    def broken(run, calls):
        raise RuntimeError("the sandbox is gone")

    monkeypatch.setattr(probe, "on_interrupted", broken)
    registry.unregister("probe_hooks")
    registry.register(Capability(id="probe_hooks", name="Probe", category="utility", description="A test probe.",
                                 tools=(), build=lambda ctx: [], tools_note="A test probe.", selectable=False,
                                 hooks=RunHooks(on_interrupted=broken)))
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    messages = [ModelRequest(parts=[UserPromptPart("Refactor")]),
                ModelResponse(parts=[ToolCallPart("run_coding_agent", {"task": "Refactor"}, "call-cut")])]
    ToolCall.objects.create(run=run, tool_call_id="call-cut", tool_name="run_coding_agent",
                            status=ToolCall.Status.RUNNING)

    results = checkpoint.resume_results(run, messages, frozenset(), None)

    assert "call-cut" in results.calls  # the model still hears the call was interrupted
