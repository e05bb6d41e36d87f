"""Delegation (capability `subagents`): real runs through the runner, on the parent run's guard and ledger.

The model side is the outside world: the real OpenAI client against tests/fakes/openai_server.py for the
end-to-end turn, scripted FunctionModels (one function answering parent and delegates, told apart by their
instructions) where the order of concurrent requests matters.
"""

from __future__ import annotations

import asyncio
import json
import threading
from decimal import Decimal
from typing import Any

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Conversation, Message, Run, RunStatus
from agents.runs import start_run
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-live-delegation-key-000111"


def _publish(org, user, spec: dict[str, Any], *, name: str):
    from agents import services

    actor = actor_of(user, org)
    agent = services.create_agent(actor=actor, name=name, spec={"name": name, **spec})
    return agent, services.publish_agent(actor=actor, agent=agent)


def _pair(org, owner, profile, *, config: dict[str, Any] | None = None, delegate_spec: dict[str, Any] | None = None,
          mode: str | None = None, parent_budget: str | None = None):
    """A published researcher and a lead that delegates to it."""
    researcher, _ = _publish(org, owner, {"instructions": "You are the researcher. Answer with facts.",
                                          "model_profile_id": str(profile.pk), **(delegate_spec or {})},
                             name="Researcher")
    sub: dict[str, Any] = {"name": "researcher", "description": "Finds facts", "agent_id": str(researcher.pk)}
    if mode:
        sub["mode"] = mode
    spec: dict[str, Any] = {"instructions": "You are the lead.", "model_profile_id": str(profile.pk),
                            "capabilities": [{"id": "subagents", "config": config or {}}], "subagents": [sub]}
    if parent_budget is not None:
        spec["budget"] = {"monthly_usd": parent_budget}
    lead, version = _publish(org, owner, spec, name="Lead")
    return researcher, lead, version


def _types(frames: list[dict]) -> list[str]:
    return [f["type"] for f in frames]


# ------------------------------------------------------------------ end to end, real OpenAI client


def test_a_sync_delegation_runs_end_to_end_through_the_real_openai_client(org, owner, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    researcher, lead, version = _pair(org, owner, profile)
    fake_openai.queue(
        Reply.tool_call("task", {"description": "Find the capital of France.", "subagent_type": "researcher"}),
        Reply.text("Paris is the capital of France."),
        Reply.text("The researcher found it: Paris."),
    )

    run = start(org, owner, lead, version, prompt="What is the capital of France?")
    frames = run_now(run)

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output == "The researcher found it: Paris."
    # One run row for the whole turn; three model requests, the middle one the researcher's own.
    assert Run.objects.count() == 1
    parent_first, delegate, parent_last = fake_openai.chat_requests
    assert "You are the researcher" in delegate.text and "Find the capital of France." in delegate.text
    assert "You are the lead" not in delegate.text
    assert "Paris is the capital of France." in parent_last.text  # the parent answered with the delegate's words
    assert {t["function"]["name"] for t in json.loads(parent_first.text).get("tools", [])} == {"task"}
    # Spend: every request in this run's ledger and totals, the delegate's attributed to the delegate.
    entries = list(SpendEntry.objects.filter(run=run).order_by("id"))
    assert [str(e.agent_id) for e in entries] == [str(lead.pk), str(researcher.pk), str(lead.pk)]
    assert run.requests == 3 and run.input_tokens == sum(e.input_tokens for e in entries)
    # Web chat: the delegation is a panel of its own, streamed live, opened and closed.
    types = _types(frames)
    assert types.index("subagent_started") < types.index("subagent_delta") < types.index("subagent_finished")
    started = next(f["data"] for f in frames if f["type"] == "subagent_started")
    assert started["name"] == "researcher" and started["depth"] == 1 and started["parent_task_id"] is None
    streamed = "".join(f["data"]["content"] for f in frames if f["type"] == "subagent_delta")
    assert streamed == "Paris is the capital of France."
    finished = next(f["data"] for f in frames if f["type"] == "subagent_finished")
    assert finished["task_id"] == started["task_id"] and finished["status"] == "completed"
    assert finished["usage"]["requests"] == 1
    assert finished["usage"]["input_tokens"] == entries[1].input_tokens
    # The child's words never become the parent's: the parent's text frames and answer are its own.
    parent_text = "".join(f["data"]["content"] for f in frames if f["type"] == "text_delta")
    assert parent_text == "The researcher found it: Paris."
    message = Message.objects.get(run=run, role=Message.Role.ASSISTANT)
    assert message.content == "The researcher found it: Paris."
    # The panel is in the transcript, after the task step, so a reopened turn draws the same panel.
    kinds = [p["type"] for p in message.parts]
    assert kinds.index("tool") < kinds.index("delegation")
    panel = next(p for p in message.parts if p["type"] == "delegation")
    assert panel["task_id"] == started["task_id"] and panel["status"] == "completed"
    assert panel["parts"] == [{"type": "text", "text": "Paris is the capital of France."}]
    from console.selectors import conversation_turns

    reopened = conversation_turns(Conversation.objects.get(pk=run.conversation_id))
    assert any(p["type"] == "delegation" and p["task_id"] == started["task_id"] for p in reopened[-1]["parts"])
    assert KEY not in json.dumps(frames) and KEY not in json.dumps(message.parts)


def test_on_the_api_no_delegation_frame_is_sent_and_the_delegate_is_not_streamed(org, owner, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    _researcher, lead, version = _pair(org, owner, profile)
    fake_openai.queue(
        Reply.tool_call("task", {"description": "Find the capital of Spain.", "subagent_type": "researcher"}),
        Reply.text("Madrid."),
        Reply.text("It is Madrid."),
    )
    run = start_run(agent=lead, version=version, surface="api", prompt="Capital of Spain?", user=owner,
                    acting_role="owner", enqueue=False)
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.output == "It is Madrid."
    assert not [t for t in _types(frames) if t.startswith("subagent")]
    # No handler where nothing draws a panel: the library runs the delegate without streaming its model.
    delegate_body = json.loads(fake_openai.chat_requests[1].text)
    assert not delegate_body.get("stream")
    assert SpendEntry.objects.filter(run=run).count() == 3


# ------------------------------------------------------------------ scripted: modes, caps, budgets, stop


class Team:
    """One FunctionModel for every agent of the run, answering by whose instructions it is reading."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Any]] = {}
        self.seen: dict[str, list[Any]] = {}
        self.gates: dict[str, threading.Event] = {}

    def role(self, marker: str, *steps: Any) -> None:
        self.scripts[marker] = list(steps)

    async def respond(self, messages, info: AgentInfo) -> ModelResponse:
        marker = next(m for m in self.scripts if m in (info.instructions or ""))
        self.seen.setdefault(marker, []).append((messages, info))
        steps = self.scripts[marker]
        step = steps.pop(0) if steps else "done"
        if isinstance(step, float):  # a slow delegate: wait, then answer
            await asyncio.sleep(step)
            step = steps.pop(0) if steps else "slow answer"
        if callable(step):
            step = step(messages)
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        if isinstance(step, list):
            return ModelResponse(parts=step)
        return ModelResponse(parts=[step])

    async def stream(self, messages, info: AgentInfo):
        """The same answers, streamed (web chat streams every model; the API does not)."""
        response = await self.respond(messages, info)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                yield part.content
            else:
                yield {index: DeltaToolCall(name=part.tool_name, json_args=json.dumps(part.args),
                                            tool_call_id=part.tool_call_id)}

    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, stream_function=self.stream)


def call(name: str, args: dict[str, Any], n: int = 0) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args, tool_call_id=f"{name}-{n}")


def returns(messages) -> list[Any]:
    return [p.content for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]


@pytest.fixture
def demo_profile(org):
    return factories.model_profile(org, label="Team")


def test_a_sync_only_agent_is_offered_task_alone_and_async_the_lifecycle_tools(org, owner, demo_profile,
                                                                             scripted_model):
    team = Team()
    scripted_model(team.model())
    for config, expected in (
        ({}, {"task"}),
        ({"mode": "async"}, {"task", "check_task", "wait_tasks", "list_active_tasks", "send_message_to_subagent",
                             "soft_cancel_task", "hard_cancel_task"}),
        ({"allow_dynamic": True}, {"task", "check_task", "wait_tasks", "list_active_tasks",
                                   "send_message_to_subagent", "soft_cancel_task", "hard_cancel_task",
                                   "create_agent", "delegate"}),
    ):
        team.seen.clear()
        team.role("You are the lead.", "hello")
        team.role("You are the researcher.", "unused")
        _r, lead, version = _pair(org, owner, demo_profile, config=config)
        run = start(org, owner, lead, version, prompt="hi")
        run_now(run)
        [(_messages, info)] = team.seen["You are the lead."]
        assert {t.name for t in info.function_tools} == expected, config
        assert "answer_subagent" not in {t.name for t in info.function_tools}
        assert "**researcher**" in info.instructions and "Finds facts" in info.instructions


def test_a_delegate_with_its_own_mode_is_marked_and_makes_the_lifecycle_tools_reachable(org, owner, demo_profile,
                                                                                        scripted_model):
    team = Team()
    scripted_model(team.model())
    team.role("You are the lead.", "hello")
    _r, lead, version = _pair(org, owner, demo_profile, mode="async")
    run_now(start(org, owner, lead, version, prompt="hi"))
    [(_m, info)] = team.seen["You are the lead."]
    assert "check_task" in {t.name for t in info.function_tools}
    assert "**researcher** (runs in the background" in info.instructions


def test_a_background_delegation_is_followed_with_check_task_and_wait_tasks(org, owner, demo_profile,
                                                                          scripted_model):
    team = Team()
    scripted_model(team.model())

    def task_id_of(messages) -> str:
        text = next(r for r in returns(messages) if isinstance(r, str) and "Task ID:" in r)
        return text.split("Task ID: ")[1].split("\n")[0]

    team.role("You are the lead.",
              call("task", {"description": "Count to three.", "subagent_type": "researcher", "mode": "sync"}),
              lambda m: call("check_task", {"task_id": task_id_of(m)}, 1),
              lambda m: call("wait_tasks", {"task_ids": [task_id_of(m)], "timeout": 20}, 2),
              "All done.")
    team.role("You are the researcher.", 0.3, "one two three")
    _r, lead, version = _pair(org, owner, demo_profile, config={"mode": "async"})
    run = start(org, owner, lead, version, prompt="count")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    lead_seen = team.seen["You are the lead."]
    started, checked, waited = (returns(lead_seen[i][0])[-1] for i in (1, 2, 3))
    # The author's async won over the model's mode="sync": the call returned a task id, not the answer.
    assert "Task started in background." in started
    assert "Status: running" in checked or "Status: pending" in checked
    assert "COMPLETED" in waited and "one two three" in waited
    finished = next(f["data"] for f in frames if f["type"] == "subagent_finished")
    assert finished["status"] == "completed"


def test_past_max_fanout_a_delegation_comes_back_as_a_tool_result_and_starts_nothing(org, owner, demo_profile,
                                                                                   scripted_model):
    team = Team()
    scripted_model(team.model())
    task = {"description": "Slow work.", "subagent_type": "researcher"}
    team.role("You are the lead.", [call("task", task, 0)], [call("task", task, 1)],
              lambda m: call("wait_tasks", {"task_ids": [r.split("Task ID: ")[1].split("\n")[0] for r in returns(m)
                                                         if isinstance(r, str) and "Task ID:" in r], "timeout": 20}, 2),
              "ok")
    team.role("You are the researcher.", 0.5, "finished slowly")
    _r, lead, version = _pair(org, owner, demo_profile, config={"mode": "async", "max_fanout": 1})
    run = start(org, owner, lead, version, prompt="go")
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    second = returns(team.seen["You are the lead."][2][0])[-1]
    assert second.startswith("Not started: 1 delegations") and "(1)" in second
    assert len(team.seen["You are the researcher."]) == 1  # the refused one never reached a model


def test_max_depth_one_builds_the_delegate_without_delegation(org, owner, demo_profile, scripted_model):
    team = Team()
    scripted_model(team.model())
    helper, _ = _publish(org, owner, {"instructions": "You are the helper.", "model_profile_id": str(demo_profile.pk)},
                         name="Helper")
    nested = {"capabilities": [{"id": "subagents", "config": {"max_depth": 3}}],
              "subagents": [{"name": "helper", "agent_id": str(helper.pk)}]}
    for depth, offered in ((1, set()), (2, {"task"})):
        team.seen.clear()
        team.role("You are the lead.", call("task", {"description": "Ask around.", "subagent_type": "researcher"}),
                  "done")
        team.role("You are the researcher.", "answer")
        team.role("You are the helper.", "unused")
        _r, lead, version = _pair(org, owner, demo_profile, config={"max_depth": depth}, delegate_spec=nested)
        run = start(org, owner, lead, version, prompt="go")
        run_now(run)
        [(_m, info)] = team.seen["You are the researcher."]
        assert {t.name for t in info.function_tools} == offered, depth


def test_a_budget_used_up_mid_delegation_refuses_before_the_request_and_the_run_keeps_its_spend(
        org, owner, fake_openai):
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key=KEY,
                                      base_url=fake_openai.base_url)
    _r, lead, version = _pair(org, owner, profile, parent_budget="0.0001")
    # The first answer costs more than the whole cap (gpt-4o-mini is priced by genai-prices).
    fake_openai.queue(Reply(calls=[{"name": "task", "arguments": {"description": "Dig.", "subagent_type":
                                                                  "researcher"}, "id": None}],
                            usage={"prompt_tokens": 100_000, "completion_tokens": 10}))
    run = start(org, owner, lead, version, prompt="dig")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.BUDGET_EXCEEDED, (run.status, run.error)
    assert len(fake_openai.chat_requests) == 1  # the delegate's request was refused before it was sent
    entries = SpendEntry.objects.filter(run=run)
    assert entries.count() == 1 and run.cost_usd == entries.get().cost_usd > Decimal("0")
    assert frames[-1]["type"] == "error" and frames[-1]["data"]["code"] == "budget_exceeded"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_stopping_the_run_cancels_its_delegates(org, owner, demo_profile, scripted_model, mode):
    from agents.runs import request_stop

    team = Team()
    scripted_model(team.model())
    lead_steps: list[Any] = [call("task", {"description": "Take forever.", "subagent_type": "researcher"})]
    if mode == "async":
        lead_steps.append(lambda m: call("wait_tasks", {"task_ids": [
            r.split("Task ID: ")[1].split("\n")[0] for r in returns(m) if isinstance(r, str) and "Task ID:" in r],
            "timeout": 60}, 1))
    team.role("You are the lead.", *lead_steps, "never")
    # A delegate that sleeps inside its model request until it is cancelled.
    team.role("You are the researcher.", 30.0, "too late")
    _r, lead, version = _pair(org, owner, demo_profile, config={"mode": mode})
    run = start(org, owner, lead, version, prompt="go")
    frames: list[dict] = []
    worker = threading.Thread(target=lambda: frames.extend(run_now(run)))
    worker.start()
    for _ in range(200):
        if team.seen.get("You are the researcher.") and len(team.seen["You are the lead."]) == len(lead_steps):
            break
        threading.Event().wait(0.05)
    assert team.seen.get("You are the researcher."), "the delegate never started"
    request_stop(Run.objects.get(pk=run.pk))
    worker.join(20)
    assert not worker.is_alive()
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    finished = [f["data"] for f in frames if f["type"] == "subagent_finished"]
    assert [f["status"] for f in finished] == ["cancelled"], finished
    assert _types(frames)[-1] == "error"


# ------------------------------------------------------------------ surfaces that do not draw panels


@pytest.mark.parametrize("surface", ["embed", "slack", "telegram", "mattermost", "schedule"])
def test_every_surface_but_web_chat_gets_no_delegation_frame_and_the_same_answer(org, owner, demo_profile,
                                                                                 scripted_model, surface):
    team = Team()
    scripted_model(team.model())
    team.role("You are the lead.", call("task", {"description": "Look it up.", "subagent_type": "researcher"}),
              lambda m: "Lead: " + str(returns(m)[-1]))
    team.role("You are the researcher.", "Found it.")
    _r, lead, version = _pair(org, owner, demo_profile)
    run = start_run(agent=lead, version=version, surface=surface, prompt="look", user=owner, acting_role="owner",
                    enqueue=False)
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.output.startswith("Lead: Found it.")
    assert not [t for t in _types(frames) if t.startswith("subagent")]
    assert len(team.seen["You are the researcher."]) == 1  # the delegation ran all the same


def test_the_embed_socket_filter_drops_delegation_frames_whatever_reaches_it():
    from embeds.frames import Toggles, TurnFilter

    turn = TurnFilter(Toggles(show_tool_steps=True, show_tool_results=True, show_thinking=True))
    for kind in ("subagent_started", "subagent_delta", "subagent_tool_call", "subagent_tool_result",
                 "subagent_finished"):
        assert turn.apply({"type": kind, "data": {"task_id": "t", "name": "researcher"}}) == []


# ------------------------------------------------------------------ specialists the model writes


def test_a_specialist_the_model_writes_runs_on_an_organization_profile_and_never_asks(org, owner, demo_profile,
                                                                                      scripted_model):
    team = Team()
    scripted_model(team.model())
    team.role("You are the lead.",
              call("delegate", {"description": "Translate 'hello'.", "instructions": "You are a translator.",
                                "name": "translator", "model": "Nowhere"}, 0),
              call("delegate", {"description": "Translate 'hello'.", "instructions": "You are a translator.",
                                "name": "translator", "model": "Team", "can_ask_questions": True}, 1),
              lambda m: "Lead: " + str(returns(m)[-1]))
    team.role("You are a translator.", "hola")
    _r, lead, version = _pair(org, owner, demo_profile, config={"allow_dynamic": True})
    run = start(org, owner, lead, version, prompt="translate")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    refused = returns(team.seen["You are the lead."][1][0])[-1]
    assert "not allowed" in refused and "Team" in refused  # the refusal names the organization's profiles
    assert run.output == "Lead: hola"
    [(_m, info)] = team.seen["You are a translator."]
    assert {t.name for t in info.function_tools} == set()  # no tools, no ask_parent: it never asks
    started = next(f["data"] for f in frames if f["type"] == "subagent_started")
    assert started["kind"] == "dynamic" and started["definition"]["instructions"] == "You are a translator."
    # Its request is in this run's ledger, attributed to the lead (a specialist has no agent row of its own).
    assert SpendEntry.objects.filter(run=run).count() == 4


# ------------------------------------------------------------------ inline specialists, sharing, result size


def test_an_inline_specialist_runs_on_its_own_profile_and_instructions(org, owner, demo_profile, scripted_model):
    team = Team()
    scripted_model(team.model())
    team.role("You are the lead.", call("task", {"description": "Write a haiku.", "subagent_type": "poet"}),
              lambda m: "Lead: " + str(returns(m)[-1]).split("\n\nChat Trace ID")[0])
    team.role("You write haiku only.", "old pond, a frog jumps")
    config = {"inline": [{"name": "poet", "description": "Writes haiku", "instructions": "You write haiku only.",
                          "model_profile_id": str(demo_profile.pk), "max_steps": 2}]}
    lead, version = _publish(org, owner, {"instructions": "You are the lead.", "model_profile_id": str(demo_profile.pk),
                                          "capabilities": [{"id": "subagents", "config": config}]}, name="Lead")
    run = start(org, owner, lead, version, prompt="haiku")
    frames = run_now(run)
    run.refresh_from_db()
    assert run.output == "Lead: old pond, a frog jumps", run.error
    [(_m, info)] = team.seen["You write haiku only."]
    assert "You write haiku only." in info.instructions
    started = next(f["data"] for f in frames if f["type"] == "subagent_started")
    assert started["kind"] == "inline" and started["agent_id"] is None
    # An inline specialist is billed with the agent it is written in.
    assert {str(e.agent_id) for e in SpendEntry.objects.filter(run=run)} == {str(lead.pk)}


def test_share_with_delegates_lends_the_parents_binding_and_nothing_else(org, owner, demo_profile, scripted_model):
    team = Team()
    scripted_model(team.model())
    for shared, expected in (([], set()), (["charts"], {"create_chart"})):
        team.seen.clear()
        team.role("You are the lead.", call("task", {"description": "Chart it.", "subagent_type": "researcher"}),
                  "done")
        team.role("You are the researcher.", "no chart")
        researcher, _lead, _v = _pair(org, owner, demo_profile)
        lead, version = _publish(org, owner, {
            "instructions": "You are the lead.", "model_profile_id": str(demo_profile.pk),
            "capabilities": [{"id": "subagents", "config": {"share_with_delegates": shared}}, {"id": "charts"},
                             {"id": "ask_user"}],
            "subagents": [{"name": "researcher", "description": "Finds facts", "agent_id": str(researcher.pk)}],
        }, name="Sharing lead")
        run_now(start(org, owner, lead, version, prompt="chart"))
        [(_m, info)] = team.seen["You are the researcher."]
        # The lead's ask_user is never lent; its charts only when named.
        assert {t.name for t in info.function_tools} & {"create_chart", "ask_user"} == expected, shared


def test_max_result_chars_cuts_what_wait_tasks_shows_and_check_task_has_it_all(org, owner, demo_profile,
                                                                              scripted_model):
    team = Team()
    scripted_model(team.model())
    long_answer = "fact " * 100

    def ids(m):
        return [r.split("Task ID: ")[1].split("\n")[0] for r in returns(m) if isinstance(r, str) and "Task ID:" in r]

    team.role("You are the lead.", call("task", {"description": "Many facts.", "subagent_type": "researcher"}),
              lambda m: call("wait_tasks", {"task_ids": ids(m), "timeout": 20}, 1),
              lambda m: call("check_task", {"task_id": ids(m)[0]}, 2), "ok")
    team.role("You are the researcher.", long_answer)
    _r, lead, version = _pair(org, owner, demo_profile, config={"mode": "async", "max_result_chars": 200})
    run_now(start(org, owner, lead, version, prompt="facts"))
    waited, checked = (returns(team.seen["You are the lead."][i][0])[-1] for i in (2, 3))
    assert "showing 200 of 500 characters" in waited and long_answer not in waited
    assert long_answer in checked
