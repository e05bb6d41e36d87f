"""Working while tools run (spec "Trabajar mientras corren las herramientas"): `browse_web` gets the harness's
`run_in_background` argument, and the model decides per call whether to wait for the browse or go on and read
its result when it arrives, as a message (`BackgroundTools` of pydantic-ai-harness).

What the library leaves to us, and how it is kept here:

- **Checked the same.** A tool's `after_tool_execute` hooks run inside the handler the background task awaits,
  so the guardrails' tool-result edge and the tool-output limits read the real result before the follow-up is
  framed; the "started" reply never passes them (it is not the tool's output).
- **Approval first.** A call the agent's approval gate holds, not yet approved, runs in the foreground: the gate
  raises `ApprovalRequired` and the run parks *before* anything starts (in the background the library would turn
  that into a failed result). Approved on resume, the same call (its `run_in_background` kept in the parked
  arguments) then runs in the background.
- **The run's life.** The library's task group lives inside the run: a run that parks (an approval, a question)
  or is stopped cancels its live browses, and results not yet delivered are dropped, not delivered on resume;
  the model is told so when the run resumes (it would otherwise wait for a result that cannot come).
  A browse meters its steps on the run (`metered.for_run`), so its spend is the run's wherever it runs.
- **One tab.** The browser tools share the run's one tab, so while a browse runs (in the background or not) the
  other browser tools, and a second browse, answer that the browser is busy instead of acting on the same page.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai import RunContext
from pydantic_ai.messages import CapabilityEvent, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.tools import ToolDefinition
from pydantic_ai_harness import BackgroundTools

logger = logging.getLogger(__name__)

BUSY = ("The browser is busy with a browse that is still running (call {call_id}); its result arrives by itself. "
        "Do not use the browser until it has.")
LOST = ("The run paused for a person while {tool} ran in the background (call {calls}); that browse was stopped "
        "and its result will not arrive. Call {tool} again if it is still needed.")


@dataclass(kw_only=True)
class BackgroundResult(CapabilityEvent, namespace="agenticos.browser", name="background_result"):
    """A background browse's result arrived: the chat's step shows it now, not at the turn's end. Emitted into the
    run's own event stream, so it reaches every follower in order, after the "started" reply it replaces."""

    call_id: str
    content: Any
    ok: bool

    def as_frame(self) -> dict[str, Any]:
        from agents.run_handle import frame, jsonable

        return frame("tool_result", tool_call_id=self.call_id, content=jsonable(self.content), ok=self.ok)


@dataclass
class BrowserBackground(BackgroundTools[Any]):
    """BackgroundTools for the browser: `browse_web` (by its visible name) may run in the background."""

    browse: str = "browse_web"
    # every browser tool's visible name (they share one tab)
    tab_tools: frozenset[str] = frozenset()
    # visible names whose calls wait for a person's approval (the binding's "required")
    gated: frozenset[str] = frozenset()
    tools: Any = field(default_factory=list)  # no tool always runs in the background; browse_web may
    id: str | None = "browser_background"
    # the browse on the tab now (its tool call id), and whether this run's history was read; reset by `for_run`
    _browsing: str | None = field(default=None, init=False, repr=False, compare=False)
    _history_read: bool = field(default=False, init=False, repr=False, compare=False)
    # the browses of this run running in the background (their tool call ids)
    _in_background: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    async def _background_mode(self, ctx: RunContext[Any],
                               tool_def: ToolDefinition) -> Literal["always", "optional"] | None:
        if tool_def.name != self.browse or _not_backgroundable(ctx, tool_def):
            return None  # a sequential run, a sequential tool and a realtime session run it in the foreground
        return "optional"

    async def wrap_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition,
                                args: dict[str, Any], handler: Any) -> Any:
        name = tool_def.name
        if name not in self.tab_tools:
            return await handler(args)
        if name in self.gated and not ctx.tool_call_approved:
            # The gate parks the run on this call before anything runs (in the background it could not).
            return await handler(args)
        busy = self._browsing
        if busy is not None and busy != call.tool_call_id:
            return BUSY.format(call_id=busy)
        if name != self.browse:
            return await handler(args)
        self._browsing = call.tool_call_id
        call_id = call.tool_call_id

        async def browsing(validated: dict[str, Any]) -> Any:
            try:
                result = await handler(validated)
            except Exception as exc:
                if call_id in self._in_background:
                    await _stored(ctx, call_id, str(exc) or type(exc).__name__, ok=False)
                raise
            finally:
                if self._browsing == call_id:
                    self._browsing = None
            if call_id in self._in_background:
                await _stored(ctx, call_id, result, ok=True)
            return result

        try:
            answer = await super().wrap_tool_execute(ctx, call=call, tool_def=tool_def, args=args, handler=browsing)
        except BaseException:
            if self._browsing == call_id:  # it never started
                self._browsing = None
            raise
        from agents.run_handle import started_in_background

        if started_in_background(call_id, answer):
            # Marked before the task first runs: the library starts it and returns without yielding.
            self._in_background.add(call_id)
        return answer


    async def before_node_run(self, ctx: RunContext[Any], *, node: Any) -> Any:
        node = await super().before_node_run(ctx, node=node)
        if not self._history_read:  # once per run, at its first step: a resumed run's history
            self._history_read = True
            lost = _lost_browses(ctx.messages or [], self.browse)
            if lost:
                ctx.enqueue(LOST.format(calls=", ".join(lost), tool=self.browse))
        return node


async def _stored(ctx: RunContext[Any], call_id: str, content: Any, *, ok: bool) -> None:
    """The background browse's result on its stored tool call (the runner stored only the "started" reply), and
    on the run's frames (`tool_result` again, with the result). A failed write or a frame that cannot go must
    not lose the result the model is about to read."""
    from asgiref.sync import sync_to_async

    from agents.run_handle import background_result

    try:
        await sync_to_async(background_result)(ctx.deps.run_id, call_id, content, ok=ok)
    except Exception:
        logger.warning("could not store a background browse's result", exc_info=True)
    try:
        await ctx.emit(BackgroundResult(call_id=call_id, content=content, ok=ok))
    except Exception:
        logger.warning("could not announce a background browse's result", exc_info=True)


def _lost_browses(messages: list[Any], browse: str) -> list[str]:
    """Background browses of this run's history whose result never came: the run parked (or stopped) under them,
    which cancelled them. The model is told so on resume; otherwise it waits for a result that cannot arrive."""
    started: list[str] = []
    finished: set[str] = set()
    for message in messages:
        for part in getattr(message, "parts", ()):
            if isinstance(part, ToolReturnPart) and part.tool_name == browse and isinstance(part.content, str) \
                    and part.content.startswith(f"Tool '{browse}' is running in background"):
                started.append(part.tool_call_id)
            elif isinstance(part, UserPromptPart):
                text = part.content if isinstance(part.content, str) else " ".join(str(getattr(c, "content", c)) for c in part.content)
                finished.update(call for call in started if f'tool_call_id="{call}"' in text)
    return [call for call in started if call not in finished]


def _not_backgroundable(ctx: RunContext[Any], tool_def: ToolDefinition) -> bool:
    run_sequential = ctx.tool_manager is not None and ctx.tool_manager.get_parallel_execution_mode() == "sequential"
    return bool(ctx.realtime or run_sequential or tool_def.sequential)


def for_binding(binding: Any, declared: Iterable[Any]) -> BrowserBackground:
    """The run's BrowserBackground, keyed by the names the model sees (a binding may rename a tool)."""
    from capabilities import registry

    names = {tool.id: registry.effective_name(binding, tool) for tool in declared}
    gated = frozenset(names[tool_id] for tool_id in names if registry.effective_approval(binding, tool_id) == "required")
    return BrowserBackground(browse=names.get("browse_web", "browse_web"), tab_tools=frozenset(names.values()),
                             gated=gated)
