"""Run built capabilities through a real pydantic-ai Agent with a scripted FunctionModel (sync test → asyncio)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import TextPart, ToolCallPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

from agents.run_handle import RunDeps
from agents.spec import AgentSpec
from capabilities import registry
from tests.capabilities.helpers import Outcome, Script, deps


def run_sync(spec: AgentSpec, calls: list[tuple[str, dict[str, Any]]], *, org_id: str,
             agent_kwargs: dict[str, Any] | None = None, profile: Any = None, **deps_kw: Any) -> Outcome:
    """A capability's tools under a bare pydantic-ai Agent: no budget guard, approval gate, ledger or audit.
    For what a tool does; anything the runner decides (approval, spend, transcript) goes through `run_real`."""
    run_deps: RunDeps = deps(organization_id=org_id, **deps_kw)
    built = registry.build_for_run(spec, run_deps, org_id)
    script = Script(calls)
    agent = Agent(FunctionModel(script, profile=profile), deps_type=RunDeps, toolsets=built.toolsets,
                  capabilities=built.capabilities, instructions=built.instructions, retries=2,
                  **(agent_kwargs or {}))
    result = asyncio.run(agent.run("go", deps=run_deps))
    return Outcome(messages=result.all_messages(), script=script, output=result.output)


@dataclass
class RealRun:
    run: Any  # agents.models.Run, read back after the runner returned
    frames: list[dict]
    script: Script


def run_real(org: Any, owner: Any, capabilities: list[dict], calls: list[tuple[str, dict[str, Any]]],
             monkeypatch: Any, *, prompt: str = "go") -> RealRun:
    """Publish an agent with these bindings and execute one run of it through the runner
    (agents.runner.execute: budget guard, approval gate, ledger, transcript, audit), the model scripted.
    `run_sync` builds a bare pydantic-ai Agent: use this one for anything the runner decides."""
    from agents.models import Conversation, Run
    from agents.runner import execute
    from agents.runner.frames import CollectingSink
    from agents.runs import start_run
    from tests.runner.conftest import publish

    script = Script(calls)

    async def streamed(messages, info):  # the runner streams: the same script, one part at a time
        for index, part in enumerate(script(messages, info).parts):
            if isinstance(part, ToolCallPart):
                yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                            tool_call_id=part.tool_call_id)}
            elif isinstance(part, TextPart):
                yield part.content

    monkeypatch.setattr("agents.runner.assembly.build_model",
                        lambda profile: FunctionModel(stream_function=streamed, model_name="scripted"))
    agent, version = publish(org, owner, capabilities=capabilities)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title=prompt)
    run = start_run(agent=agent, version=version, surface="web", prompt=prompt, user=owner, acting_role="owner",
                    conversation=conversation, enqueue=False)
    sink = CollectingSink()
    execute(run.pk, sink)
    return RealRun(run=Run.objects.get(pk=run.pk), frames=sink.frames, script=script)


def resume_real(real: RealRun, actor: Any) -> RealRun:
    """Resume a parked run (governance.resume_run) and execute it again through the runner."""
    from agents.models import Run
    from agents.runner import execute
    from agents.runner.frames import CollectingSink
    from governance.services import resume_run

    resume_run(actor=actor, run=real.run)
    sink = CollectingSink()
    execute(real.run.pk, sink)
    return RealRun(run=Run.objects.get(pk=real.run.pk), frames=sink.frames, script=real.script)
