"""The guardrails a run carries: four edges, each redacting or blocking (spec "Reglas de protección").

Two pydantic-ai capabilities, because the edges sit at two depths of the chain:

- `RequestGuardrails` wraps the run's BudgetGuard (`CapabilityOrdering(wraps=[MeteredRequests])`, its type), so a response
  is always priced and written to the ledger before a verdict on it can end the run, and a prompt blocked at
  the input edge never reaches the guard (nothing is spent). It owns
  - the **input** edge: the model is sent the cleaned prompt — every user prompt of the request, the
    conversation's earlier turns too — while the transcript keeps what the person typed; a blocked term in the
    turn's prompt ends the run before any model request;
  - the **output** edge, stream-safe: `wrap_run_event_stream` holds each text and reasoning part until it is
    complete, checks it with the same detectors and only then lets it through (so every surface — the web
    chat, embeds, channel bots' live edits, the API — only ever receives checked text; a secret split across
    two chunks is whole when it is read). What was already shown is kept (a tail), and a match that spans it
    and the new part — text before a tool call and after it, reasoning then answer — ends the run before the
    second half is sent. A blocked term in the answer ends the run; in reasoning it withholds that step. The
    response itself is redacted too, so the answer, the run's output and its stored history agree with what
    was streamed;
  - the **tool arguments** edge: each call's arguments are cleaned when the response arrives, before any tool
    runs, so the redacted value is what the tool receives, what the transcript stores and (held like text)
    what the stream shows; a blocked term ends the run before any tool is called.
- `ToolResultGuardrail` sits innermost, so it reads a tool's result before anything else does — before
  tool-output limits spill or summarize it, and before the model reads it: the prompt-injection edge.

A blocked term raises `GuardrailBlocked` (a harness `GuardrailError`); the runner ends the run
`guardrail_blocked`, its own outcome.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import _utils
from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolCallPartDelta,
    UserPromptPart,
)

from agents.run_handle import MeteredRequests
from capabilities.guardrails.screen import WITHHELD_REASONING, GuardrailBlocked, Screen

# How much of what was already shown a new part is read together with (a key or a PEM block is shorter).
SHOWN_TAIL = 8_000


@dataclass
class RequestGuardrails(AbstractCapability[Any]):
    """The input, output and tool-arguments edges of one run (built per run, so its state is the run's)."""

    inp: Screen | None = None
    out: Screen | None = None
    args: Screen | None = None
    # What the stream has let through so far (its tail), read with each new part for a match across parts.
    shown: str = field(default="", repr=False)
    # Set by the stream when a part held a blocked term; raised once the response is in the ledger.
    blocked: GuardrailBlocked | None = field(default=None, repr=False)
    _prompt_checked: bool = field(default=False, repr=False)

    def get_ordering(self) -> CapabilityOrdering:
        return CapabilityOrdering(wraps=[MeteredRequests])

    # ------------------------------------------------------------- model requests

    async def wrap_model_request(self, ctx, *, request_context, handler):
        if self.inp is not None:
            if not self._prompt_checked:
                self._prompt_checked = True
                prompt = _latest_prompt(request_context.messages)
                if prompt is not None and self.inp.blocked(_prompt_text(prompt.content)):
                    raise GuardrailBlocked("in")
            request_context.messages = [self._clean_request(m) for m in request_context.messages]
        response = await handler(request_context)
        if self.blocked is not None:
            raise self.blocked
        if self.out is not None or self.args is not None:
            response = self._clean_response(response)
        return response

    def _clean_request(self, message: Any) -> Any:
        assert self.inp is not None
        if not isinstance(message, ModelRequest):
            return message
        parts = [replace(p, content=self._clean_prompt(p.content)) if isinstance(p, UserPromptPart) else p
                 for p in message.parts]
        return message if all(a is b for a, b in zip(parts, message.parts, strict=True)) else replace(
            message, parts=parts)

    def _clean_prompt(self, content: Any) -> Any:
        assert self.inp is not None
        if isinstance(content, str):
            return self.inp.redact(content)
        # A prompt with attachments: its text items are cleaned, the files are kept (the harness's
        # InputGuardrail refuses to rewrite such a prompt, so this edge is written here).
        return [self.inp.redact(item) if isinstance(item, str) else item for item in content]

    def _clean_response(self, response: ModelResponse) -> ModelResponse:
        parts: list[Any] = []
        for part in response.parts:
            if isinstance(part, TextPart) and self.out is not None:
                part = replace(part, content=self.out.clean(part.content))
            elif isinstance(part, ToolCallPart) and self.args is not None:
                arguments = part.args_as_dict()
                cleaned = self.args.clean_value(arguments)
                if cleaned != arguments:
                    part = replace(part, args=cleaned)
            parts.append(part)
        return replace(response, parts=parts)



@dataclass
class StreamGuardrails(RequestGuardrails):
    """RequestGuardrails with the output or arguments edge: the stream is held part by part. Its own class
    because a stream hook puts every request of the run on the streaming path, which an agent checking only
    its input has no reason to take."""

    # ------------------------------------------------------------- the stream

    def _holds(self, part: Any) -> bool:
        if isinstance(part, TextPart | ThinkingPart):
            return self.out is not None
        return isinstance(part, ToolCallPart) and self.args is not None

    async def wrap_run_event_stream(self, ctx, *, stream: AsyncIterable[Any]) -> AsyncIterable[Any]:
        held: dict[int, PartStartEvent] = {}
        try:
            async for event in stream:
                if self.blocked is not None:
                    continue  # nothing more is shown once a part was blocked
                if isinstance(event, PartStartEvent) and self._holds(event.part):
                    held[event.index] = event
                    continue
                if isinstance(event, PartDeltaEvent) and event.index in held:
                    held[event.index] = _applied(held[event.index], event)
                    continue
                if isinstance(event, PartEndEvent) and event.index in held:
                    start = held.pop(event.index)
                    for released in self._release(start, event.part, event):
                        yield released
                    continue
                yield event
            for index in sorted(held):  # a part the stream never ended: released as it stands
                start = held.pop(index)
                for released in self._release(start, start.part, None):
                    yield released
        finally:
            await _utils.aclose_if_supported(stream)

    def _release(self, start: PartStartEvent, part: Any, end: PartEndEvent | None) -> list[Any]:
        try:
            if isinstance(part, ToolCallPart):
                return self._release_call(start, part, end)
            return self._release_text(start, part, end)
        except GuardrailBlocked as exc:
            self.blocked = exc
            return []

    def _release_text(self, start: PartStartEvent, part: TextPart | ThinkingPart, end: PartEndEvent | None) -> list[Any]:
        assert self.out is not None
        tail = self.shown[-SHOWN_TAIL:]
        thinking = isinstance(part, ThinkingPart)
        if self.out.blocked(part.content) or (self.out.blocked(tail + part.content) and not self.out.blocked(tail)):
            if not thinking:
                raise GuardrailBlocked("out")
            text = WITHHELD_REASONING
        else:
            text = self.out.redact(part.content)
            # A match across what was shown and this part: the first half is on screen already.
            if tail and self.out.redact(tail + text) != self.out.redact(tail) + text:
                raise GuardrailBlocked("out", "a match spanned two parts")
        self.shown = (tail + text)[-SHOWN_TAIL:]
        checked = replace(part, content=text)
        released: list[Any] = [replace(start, part=checked)]
        if end is not None:
            released.append(replace(end, part=checked))
        return released

    def _release_call(self, start: PartStartEvent, part: ToolCallPart, end: PartEndEvent | None) -> list[Any]:
        assert self.args is not None
        cleaned = self.args.clean_value(part.args_as_dict())
        released: list[Any] = [
            replace(start, part=replace(part, args=None)),
            PartDeltaEvent(index=start.index, delta=ToolCallPartDelta(args_delta=json.dumps(cleaned),
                                                                      tool_call_id=part.tool_call_id)),
        ]
        if end is not None:
            released.append(replace(end, part=replace(part, args=cleaned)))
        return released


@dataclass
class ToolResultGuardrail(AbstractCapability[Any]):
    """The tool-result edge: what a tool returned is cleaned before anything else reads it."""

    screen: Screen

    def get_ordering(self) -> CapabilityOrdering:
        return CapabilityOrdering(position="innermost")

    async def after_tool_execute(self, ctx, *, call, tool_def, args, result):
        return self.screen.clean_value(result)


def _applied(start: PartStartEvent, event: PartDeltaEvent) -> PartStartEvent:
    """The held part with this delta applied (kept only for a stream that never ends the part)."""
    try:
        return replace(start, part=event.delta.apply(start.part))  # type: ignore[arg-type]
    except Exception:  # a delta of another kind: the complete part comes with its end event
        return start


def _latest_prompt(messages: list[Any]) -> UserPromptPart | None:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart):
                    return part
    return None


def _prompt_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(item for item in content if isinstance(item, str))
