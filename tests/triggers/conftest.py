"""Triggers under test: a published agent with memory, conversation search and ask_user; triggers made
through the services as their creator; a streamed scripted model that records what it was sent."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.runner import execute
from agents.runner.frames import CollectingSink
from tests import factories
from tests.runner.conftest import actor_of
from triggers import services

CAPABILITIES = [{"id": "memory_files"}, {"id": "conversation_search"}, {"id": "ask_user"}]


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, capabilities=CAPABILITIES)


def make_trigger(user, org, agent, **data):
    values: dict[str, Any] = {"name": "Nightly", "kind": "schedule", "prompt": "Write the nightly report.",
                              "cron": "0 9 * * *", "timezone": "UTC"}
    values.update(data)
    if values["kind"] == "event":
        values.pop("cron", None)
    return services.create_trigger(actor=actor_of(user, org), agent=agent, data=values)


@dataclass
class ScriptedCalls:
    """Streams one tool call per response from `calls`, then "done"; keeps the prompts and tool returns."""

    calls: list[tuple[str, dict[str, Any]]]
    prompts: list[str] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)

    def model(self) -> FunctionModel:
        async def stream(messages: list[ModelMessage], info: AgentInfo):
            step = sum(1 for m in messages if isinstance(m, ModelRequest)) - 1
            if step == 0:
                self.offered = sorted(t.name for t in info.function_tools)
                self.prompts = [str(p.content) for m in messages if isinstance(m, ModelRequest)
                                for p in m.parts if isinstance(p, UserPromptPart)]
            last = messages[-1]
            self.returns += [str(p.content) for p in getattr(last, "parts", []) if isinstance(p, ToolReturnPart)]
            if step < len(self.calls):
                name, args = self.calls[step]
                yield {0: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f"call-{step}")}
            else:
                yield "done"

        return FunctionModel(stream_function=stream, model_name="scripted")


@pytest.fixture
def script(scripted_model):
    def install(calls=()):
        scripted = ScriptedCalls(list(calls))
        scripted_model(scripted.model())
        return scripted

    return install


def run_now(run_id) -> list[dict]:
    sink = CollectingSink()
    execute(run_id, sink)
    return sink.frames
