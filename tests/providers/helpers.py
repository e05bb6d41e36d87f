"""Run a pydantic-ai agent and keep every streamed event (shared by the provider tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent, AgentRunResultEvent
from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta, ToolCallPart


@dataclass
class Streamed:
    events: list[Any] = field(default_factory=list)
    result: Any = None

    @property
    def text_pieces(self) -> list[str]:
        """The text as it arrived: each part's first content, then each delta."""
        pieces = []
        for event in self.events:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart) and event.part.content:
                pieces.append(event.part.content)
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                pieces.append(event.delta.content_delta)
        return pieces

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        calls = []
        for message in self.result.all_messages():
            calls.extend(part for part in message.parts if isinstance(part, ToolCallPart))
        return calls


async def stream_run(agent: Agent, prompt: str, **kwargs: Any) -> Streamed:
    streamed = Streamed()
    async with agent.run_stream_events(prompt, **kwargs) as events:
        async for event in events:
            streamed.events.append(event)
            if isinstance(event, AgentRunResultEvent):
                streamed.result = event.result
    return streamed
