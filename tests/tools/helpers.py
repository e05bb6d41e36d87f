"""Run built capabilities through a real pydantic-ai Agent with a scripted FunctionModel (sync test → asyncio)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

from agents.runner.deps import RunDeps
from agents.spec import AgentSpec
from capabilities import registry
from tests.capabilities.helpers import Outcome, Script, deps


def run_sync(spec: AgentSpec, calls: list[tuple[str, dict[str, Any]]], *, org_id: str,
             agent_kwargs: dict[str, Any] | None = None, profile: Any = None, **deps_kw: Any) -> Outcome:
    run_deps: RunDeps = deps(organization_id=org_id, **deps_kw)
    built = registry.build_for_run(spec, run_deps, org_id)
    script = Script(calls)
    agent = Agent(FunctionModel(script, profile=profile), deps_type=RunDeps, toolsets=built.toolsets,
                  capabilities=built.capabilities, instructions=built.instructions, retries=2,
                  **(agent_kwargs or {}))
    result = asyncio.run(agent.run("go", deps=run_deps))
    return Outcome(messages=result.all_messages(), script=script, output=result.output)
