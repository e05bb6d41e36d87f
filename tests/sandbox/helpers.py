"""A scripted model for runs through the real runner: it makes the given tool calls one per response and
records every tool result it is sent, then answers "done"."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel


@dataclass
class ToolScript:
    calls: list[tuple[str, dict[str, Any]]]
    results: list[str] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)
    step: int = 0  # tool calls made so far

    def model(self) -> FunctionModel:
        async def stream(messages, info: AgentInfo):
            if not self.offered:
                self.offered = sorted(t.name for t in info.function_tools)
                self.instructions.append(info.instructions or "")
                first = next(m for m in messages if isinstance(m, ModelRequest))
                self.prompts.extend(p.content for p in first.parts if getattr(p, "part_kind", "") == "user-prompt")
            last = messages[-1]
            if isinstance(last, ModelRequest):
                self.results.extend(str(p.content) for p in last.parts if isinstance(p, ToolReturnPart))
                self.results.extend(p.model_response() for p in last.parts
                                    if getattr(p, "part_kind", "") == "retry-prompt")
            if self.step < len(self.calls):
                name, args = self.calls[self.step]
                self.step += 1
                yield {0: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f"call-{self.step}")}
                return
            yield "done"

        return FunctionModel(stream_function=stream, model_name="scripted")
