"""Run knowledge capabilities the way the runner does: build on a DB thread, then a real pydantic-ai Agent
scripted with a FunctionModel."""

from __future__ import annotations

import itertools
from typing import Any

from asgiref.sync import sync_to_async
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

from agents.run_handle import RunDeps
from agents.spec import load_spec
from capabilities import registry
from tests.capabilities.helpers import Outcome, Script

_ids = itertools.count(1)


def deps_for(agent, *, surface: str = "web", user=None, run=None, conversation=None, options=None,
             **extra) -> RunDeps:
    """Deps for a real Run row of the agent's latest version (created unless `run=` is given)."""
    from agents.models import Run

    version = agent.versions.order_by("-number").first()
    if run is None:
        run = Run.objects.create(organization_id=agent.organization_id, agent=agent, version=version,
                                 conversation=conversation, surface=surface, user=user, options=options or {})
    return RunDeps(
        run_id=str(run.pk),
        organization_id=str(agent.organization_id),
        agent_id=str(agent.pk),
        version_id=str(version.pk),
        surface=surface,
        conversation_id=str(conversation.pk) if conversation is not None else None,
        user_id=user.pk if user is not None else None,
        **extra,
    )


def built_for(agent, run_deps: RunDeps):
    version = agent.versions.order_by("-number").first()
    return registry.build_for_run(load_spec(version.spec), run_deps, str(agent.organization_id))


async def run_agent(agent, calls: list[tuple[str, dict[str, Any]]], run_deps: RunDeps, *, model_function=None):
    built = await sync_to_async(built_for)(agent, run_deps)
    script = Script(calls)
    agent_ = Agent(
        FunctionModel(model_function or script),
        deps_type=RunDeps,
        toolsets=built.toolsets,
        capabilities=built.capabilities,
        instructions=built.instructions,
    )
    result = await agent_.run("go", deps=run_deps)
    return Outcome(messages=result.all_messages(), script=script, output=result.output), built


async def arun(agent, calls, *, model_function=None, **deps_kwargs):
    """`run_agent` with the deps built on a DB thread (deps_for reads the agent's latest version)."""
    run_deps = await sync_to_async(deps_for)(agent, **deps_kwargs)
    return await run_agent(agent, calls, run_deps, model_function=model_function)
