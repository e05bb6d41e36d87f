"""What capabilities/subagents relies on in subagents-pydantic-ai: a release that changes any of it goes red here.

- A handler attached to a delegation changes the transport: the library then streams the delegate's model.
  So the platform attaches one only where a surface draws panels, and a delegate whose model cannot stream
  still works from the API (the surfaces spec, "Una delegación en una superficie que no puede mostrarla").
- `task`'s `mode` defaults to sync, so the author's mode must replace it in passing.
- The library asks the parent's deps for each delegate's (`clone_for_subagent`): the platform answers with the
  delegate's own RunDeps.
- A contained crash reaches the parent as `ModelRetry` caused by the original exception (a budget refusal is
  raised again from it), and a delegate's usage limit propagates (the platform turns it into a tool result).
- `wait_tasks` cuts a long answer with a marker pointing at `check_task`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRetry, UsageLimitExceeded
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits
from subagents_pydantic_ai import SubAgentConfig, SubAgentToolset


@dataclass
class Deps:
    cloned: list[int]

    def clone_for_subagent(self, max_depth: int = 0) -> Deps:
        self.cloned.append(max_depth)
        return Deps(cloned=self.cloned)


def answering(text: str) -> FunctionModel:
    """A model that can only answer in one piece: it has no stream function."""

    def reply(messages, info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(reply)


def toolset(delegate: Agent, **kwargs: Any) -> SubAgentToolset:
    return SubAgentToolset(
        subagents=[SubAgentConfig(name="helper", description="Helps", instructions="", agent=delegate,
                                  can_ask_questions=False)],
        include_general_purpose=False, **kwargs)


def parent_calling(args: dict[str, Any]) -> FunctionModel:
    def reply(messages, info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("task", args, tool_call_id="t1")])
        return ModelResponse(parts=[TextPart("parent done")])

    return FunctionModel(reply)


async def _run(ts: SubAgentToolset, args: dict[str, Any] | None = None):
    parent = Agent(parent_calling(args or {"description": "do it", "subagent_type": "helper"}), toolsets=[ts])
    deps = Deps(cloned=[])
    result = await parent.run("go", deps=deps)
    return result, deps


async def test_without_a_handler_a_delegate_whose_model_cannot_stream_still_answers():
    seen: list[str] = []
    ts = toolset(Agent(answering("helped")), event_stream_handler_factory=lambda ctx, config, task_id: (
        seen.append(task_id) or None))
    result, deps = await _run(ts)
    assert result.output == "parent done"
    assert "helped" in str(result.all_messages())
    assert len(seen) == 1  # asked once per delegation, with its task id
    assert deps.cloned == [-1]  # the parent's deps were asked for the delegate's


async def test_with_a_handler_the_library_streams_the_delegate_so_one_that_cannot_stream_fails():
    async def handler(ctx, events):
        async for _ in events:
            pass

    ts = toolset(Agent(answering("helped")), event_stream_handler_factory=lambda ctx, config, task_id: handler)
    result, _deps = await _run(ts)
    # Contained: the parent is told the delegate crashed (a retry prompt) and never saw its answer.
    text = str(result.all_messages())
    assert "Subagent 'helper' crashed" in text and "helped" not in text


def test_task_mode_defaults_to_sync_so_the_model_saying_nothing_and_choosing_sync_are_one_call():
    assert inspect.signature(SubAgentToolset.task).parameters["mode"].default == "sync"


async def test_a_contained_crash_reaches_the_parent_as_model_retry_caused_by_the_original():
    class Refused(Exception):
        pass

    def crash(messages, info):
        raise Refused("no money")

    ts = toolset(Agent(FunctionModel(crash)))
    deps = Deps(cloned=[])
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    ctx = RunContext(deps=deps, model=TestModel(), usage=RunUsage(), run_id="r1", tool_call_id="t1")
    with pytest.raises(ModelRetry) as caught:
        await ts.task(ctx, "do it", "helper")
    assert isinstance(caught.value.__cause__, Refused)


async def test_a_delegates_usage_limit_propagates_out_of_a_sync_delegation():
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    ts = toolset(Agent(answering("x")), usage_limits=UsageLimits(request_limit=0))
    ctx = RunContext(deps=Deps(cloned=[]), model=TestModel(), usage=RunUsage(), run_id="r1", tool_call_id="t1")
    with pytest.raises(UsageLimitExceeded):
        await ts.task(ctx, "do it", "helper")


async def test_wait_tasks_cuts_a_long_answer_with_a_marker_pointing_at_check_task():
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    ts = toolset(Agent(answering("word " * 200)), max_result_chars=200)
    ctx = RunContext(deps=Deps(cloned=[]), model=TestModel(), usage=RunUsage(), run_id="r1", tool_call_id="t1")
    started = await ts.task(ctx, "do it", "helper", mode="async")
    task_id = started.split("Task ID: ")[1].split("\n")[0]
    listing = await ts.wait_tasks(ctx, [task_id], timeout=10)
    assert f"Call check_task('{task_id}')" in listing and "showing 200 of 1000 characters" in listing
    assert ("word " * 200) in await ts.check_task(ctx, task_id)
