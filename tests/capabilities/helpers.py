"""Run capabilities through a real pydantic-ai Agent with a scripted FunctionModel."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agents.run_handle import RunDeps
from agents.spec import AgentSpec
from capabilities import registry

_ids = itertools.count(1)


def deps(**overrides: Any) -> RunDeps:
    values: dict[str, Any] = {
        "run_id": f"run-{next(_ids)}",
        "organization_id": "00000000-0000-0000-0000-000000000001",
        "agent_id": "agent",
        "version_id": "version",
        "surface": "api",
    }
    values.update(overrides)
    return RunDeps(**values)


def spec(*bindings: dict[str, Any]) -> AgentSpec:
    return AgentSpec(name="Test agent", capabilities=list(bindings))


@dataclass
class Script:
    """The model calls `calls` in order, one tool call per response, then answers "done"."""

    calls: list[tuple[str, dict[str, Any]]]
    requests: list[AgentInfo] = field(default_factory=list)
    sent: list[list[ModelMessage]] = field(default_factory=list)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(info)
        self.sent.append(list(messages))
        step = len(self.requests) - 1
        if step < len(self.calls):
            name, args = self.calls[step]
            return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args, tool_call_id=f"call-{step}")])
        return ModelResponse(parts=[TextPart("done")])

    @property
    def offered(self) -> list[str]:
        return sorted(t.name for t in self.requests[0].function_tools)


@dataclass
class Outcome:
    messages: list[ModelMessage]
    script: Script
    output: Any

    def parts(self, kind: type) -> list[Any]:
        return [
            p for m in self.messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, kind)
        ]

    @property
    def returns(self) -> list[Any]:
        """Tool results the model got as answers (not retry requests)."""
        return [p.content for p in self.parts(ToolReturnPart) if not is_retry(p)]

    @property
    def retries(self) -> list[str]:
        """Retry requests the model got (pydantic-ai 2.62 records them as ToolReturnPart outcome='retried')."""
        texts = [str(p.content) for p in self.parts(ToolReturnPart) if is_retry(p)]
        return texts + [p.model_response() for p in self.parts(RetryPromptPart)]


def is_retry(part: ToolReturnPart) -> bool:
    return getattr(part, "outcome", None) == "retried"


def agent_for(
    the_spec: AgentSpec,
    run_deps: RunDeps,
    script: Script,
    profile: Any = None,
    built: registry.BuiltCapabilities | None = None,
    **agent_kwargs: Any,
) -> Agent:
    built = built or registry.build_for_run(the_spec, run_deps)
    return Agent(
        FunctionModel(script, profile=profile),
        deps_type=RunDeps,
        toolsets=built.toolsets,
        capabilities=built.capabilities,
        instructions=built.instructions,
        **agent_kwargs,
    )


async def run(
    the_spec: AgentSpec, calls: list[tuple[str, dict[str, Any]]], run_deps: RunDeps | None = None, **kw
):
    run_deps = run_deps or deps()
    script = Script(calls)
    agent = agent_for(the_spec, run_deps, script, **kw)
    result = await agent.run("go", deps=run_deps)
    return Outcome(messages=result.all_messages(), script=script, output=result.output)
