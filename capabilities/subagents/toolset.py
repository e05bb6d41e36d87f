"""The delegation toolset: subagents-pydantic-ai's `SubAgentToolset`, wrapped where the spec needs more.

What the library does is used as it is: the task manager, sync and background execution, chat traces,
steering, both cancellations, `wait_tasks`' truncation marker, run-scoped task ids, the event-stream
handler factory. `DelegatingToolset` adds only what the library cannot know:

- **the author's mode**: the library's `task` takes a `mode` argument defaulting to sync, so "the model chose
  to wait" and "the model said nothing" are the same call; the argument is replaced in passing, and `auto`
  is resolved (with the library's own `decide_execution_mode`) before the delegation starts;
- **the fan-out cap** as a tool result the model can act on, not an error that ends the run;
- **what is offered**: the six lifecycle tools only where a background delegation is reachable,
  create_agent/delegate only under allow_dynamic, answer_subagent to nobody (all ten stay declared);
- **per-delegate deps**: the library clones the parent's deps for every delegate; here each delegate runs
  with its own `RunDeps` (its agent, its tools' scratch), so the parent's deps are swapped for a small object
  whose `clone_for_subagent` returns that delegate's;
- **failures the run must see**: a `BudgetExceeded` the library contained into a retry is raised again (the
  run ends `budget_exceeded` with its spend), and a delegate's own step limit is a tool result rather than
  the parent run's step-limit failure;
- **panels**: frames for the web chat's delegation panels and their copy in the transcript (`Panels`),
  attached only where a surface draws them — attaching a handler makes the library stream the delegate's
  model, so a delegate whose provider cannot stream would otherwise fail on one surface only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, UsageLimitExceeded
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.usage import UsageLimits
from subagents_pydantic_ai import (
    SubAgentConfig,
    SubAgentToolset,
    TaskCharacteristics,
    decide_execution_mode,
)

from capabilities.base import BuildContext, Built, NotBuilt
from capabilities.subagents.capability import DYNAMIC, LIFECYCLE, NEVER_OFFERED, SubagentsConfig
from capabilities.subagents.delegates import (
    BACKGROUND,
    CURRENT_DEPTH,
    CURRENT_TASK,
    BuiltDelegate,
    DelegateCapExceeded,
    DelegateUsage,
    DelegationContext,
    dynamic_factory,
    inline_delegates,
    published_delegates,
)
from governance.budgets import BudgetExceeded

if TYPE_CHECKING:
    from capabilities.lifecycle import RunHandle

logger = logging.getLogger(__name__)

FANOUT_REFUSAL = (
    "Not started: {running} delegations of this run are already going, the most this agent runs at once "
    "({cap}). Wait for one to finish (wait_tasks), or do this part yourself."
)
STEP_LIMIT = ("The delegate {name} reached its step limit ({steps} model requests) before answering. Decide "
              "from what you have, or delegate a smaller task.")
NOBODY_TO_ASK = ("Nobody can answer questions here, so the person did not answer. Make a reasonable choice, "
                 "say which one you made, and continue.")
RESULT_PREVIEW = 2000


def build_delegation(ctx: BuildContext) -> list[Built]:
    config = ctx.config
    assert isinstance(config, SubagentsConfig)
    deps = ctx.deps
    spec = ctx.spec
    inherited = deps.scratch.get("delegation_levels_left")
    # Each agent of the tree keeps to its own max_depth, bounded by what is left of the tree above it.
    levels = config.max_depth if inherited is None else min(int(inherited), config.max_depth)
    if levels <= 0:
        raise NotBuilt("this agent runs as a delegate at the end of the delegation depth, so it does not delegate")
    if spec is None or not (spec.subagents or spec.external_agents or config.inline or config.allow_dynamic):
        raise NotBuilt("it names no delegates")
    execution = deps.execution
    usage: dict[str, DelegateUsage] = deps.scratch.setdefault("delegation_usage", {})
    shared = [b for b in spec.enabled_bindings() if b.id in config.share_with_delegates and b.id != "subagents"]
    dctx = DelegationContext(execution=execution, parent_deps=deps, organization_id=ctx.organization_id,
                             levels_left=levels - 1, usage=usage, shared=shared)
    built, missing = published_delegates(dctx, spec)
    more, missing_inline = inline_delegates(dctx, config.inline)
    # Remote agents over A2A (capabilities/remote_agents): delegates whose model is the remote agent.
    from capabilities.remote_agents.delegate import remote_delegates

    delegates = built + more + remote_delegates(dctx, spec)
    missing += missing_inline
    factory = dynamic_factory(dctx) if config.allow_dynamic else None
    if not delegates and factory is None:
        raise NotBuilt(f"none of its delegates can be reached ({', '.join(missing)})")
    return [Delegation(config=config, delegates={d.name: d for d in delegates}, missing=missing,
                       execution=execution, dynamic=factory, usage=usage, root=inherited is None,
                       panels=Panels(execution, enabled=_draws_panels(execution)))]


# run id → that run's root delegation, while its agent lives (weakly: nothing here keeps a run alive).
_ROOTS: weakref.WeakValueDictionary[str, Delegation] = weakref.WeakValueDictionary()


def parked_extras(run_id: Any) -> dict[str, Any]:
    """For `agents.runner.parking.park`: what delegation keeps across a park besides the parked calls."""
    delegation = _ROOTS.get(str(run_id))
    return delegation.parked_extras() if delegation is not None else {}


def _draws_panels(execution: RunHandle | None) -> bool:
    """Only web chat draws delegation panels; every other surface gets no delegation frame (and so the
    library is given no handler, and the delegate's model is not streamed there)."""
    return execution is not None and getattr(execution.run, "surface", "") == "web"


# ------------------------------------------------------------------ panels


@dataclass
class Panels:
    """Delegation panels: `subagent_*` frames for the web chat, and the same panel in the transcript's parts
    (a `delegation` part after the `task` step), so a reopened turn draws what the live one drew."""

    execution: RunHandle | None
    enabled: bool
    # task id → the transcript part of that delegation
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    sending: set[asyncio.Task[Any]] = field(default_factory=set)

    def open(self, ctx: RunContext[Any], config: SubAgentConfig, task_id: str, *, mode: str,
             description: str) -> None:
        if not self.enabled or self.execution is None or task_id in self.parts:
            return
        delegate: BuiltDelegate | None = (config.get("extra") or {}).get("delegate")
        part: dict[str, Any] = {
            "type": "delegation", "task_id": task_id, "parent_task_id": CURRENT_TASK.get(),
            "depth": CURRENT_DEPTH.get() + 1, "name": config["name"],
            "kind": delegate.kind if delegate is not None else "dynamic",
            "agent_id": delegate.agent_id if delegate is not None else None,
            "tool_call_id": ctx.tool_call_id, "mode": mode, "task": description[:500], "status": "running",
            "parts": [], "usage": None,
        }
        if delegate is None:
            # A specialist the model wrote: its definition travels in the opening frame, the only place it is
            # readable before the turn ends (a person may promote it to a draft).
            part["definition"] = {"instructions": config.get("instructions", "")[:4000],
                                  "model": str(config.get("model", ""))}
        self.parts[task_id] = part
        transcript = getattr(self.execution, "transcript", None)
        if transcript is not None:
            transcript.parts.append(part)
        self._send("subagent_started", {k: v for k, v in part.items() if k not in ("parts", "type")})

    def handler(self, task_id: str):
        if not self.enabled:
            return None

        async def on_events(run_ctx: RunContext[Any], events: Any) -> None:
            async for event in events:
                await self._on_event(task_id, event)

        return on_events

    async def _on_event(self, task_id: str, event: Any) -> None:
        part = self.parts.get(task_id)
        if part is None:
            return
        depth = part["depth"]
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart | ThinkingPart):
            kind = "text" if isinstance(event.part, TextPart) else "thinking"
            part["parts"].append({"type": kind, "text": event.part.content or ""})
            if event.part.content:
                await self._emit("subagent_delta", task_id=task_id, depth=depth, part_type=kind,
                                 content=event.part.content, new_part=True)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta | ThinkingPartDelta):
            kind = "text" if isinstance(event.delta, TextPartDelta) else "thinking"
            content = event.delta.content_delta or ""
            if not content:
                return
            inner = part["parts"]
            if inner and inner[-1]["type"] == kind:
                inner[-1]["text"] += content
            else:
                inner.append({"type": kind, "text": content})
            await self._emit("subagent_delta", task_id=task_id, depth=depth, part_type=kind, content=content)
        elif isinstance(event, FunctionToolCallEvent):
            from agents.run_handle import jsonable

            call = event.part
            args = jsonable(call.args_as_dict())
            part["parts"].append({"type": "tool", "tool_call_id": call.tool_call_id, "tool_name": call.tool_name,
                                  "args": args, "status": "running", "result": None})
            await self._emit("subagent_tool_call", task_id=task_id, depth=depth, tool_call_id=call.tool_call_id,
                             tool_name=call.tool_name, args=args)
        elif isinstance(event, FunctionToolResultEvent):
            from agents.run_handle import jsonable

            returned = event.part
            ok = getattr(returned, "part_kind", "") == "tool-return" and getattr(
                returned, "outcome", "success") in ("success", None)
            content = jsonable(getattr(returned, "content", None))
            if isinstance(content, str) and len(content) > RESULT_PREVIEW:
                content = content[:RESULT_PREVIEW] + " […]"
            for step in part["parts"]:
                if step["type"] == "tool" and step["tool_call_id"] == returned.tool_call_id:
                    step["status"], step["result"] = ("ok" if ok else "error"), content
            await self._emit("subagent_tool_result", task_id=task_id, depth=depth,
                             tool_call_id=returned.tool_call_id, ok=ok, content=content)

    def close(self, task_id: str, status: str, usage: DelegateUsage | None) -> None:
        part = self.parts.get(task_id)
        if part is None or part["status"] not in ("running",):
            return
        if status == "deferred":
            # A background delegation that suspended anyway (a shape the library documents as undeliverable):
            # failed, with the library's "use mode='sync'" text on its handle — not a panel left waiting.
            status = "failed"
        part["status"] = status
        part["usage"] = None if usage is None else {
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "requests": usage.requests,
            "cost_usd": f"{usage.cost:f}", "cost_is_partial": usage.partial}
        for step in part["parts"]:
            if step["type"] == "tool" and step["status"] == "running":
                step["status"] = "unfinished"
        self._send("subagent_finished", {"task_id": task_id, "depth": part["depth"], "status": status,
                                         "usage": part["usage"]})

    def _send(self, kind: str, data: dict[str, Any]) -> None:
        # From sync code (the library's factory, a task's done-callback): the frame keeps its order on the
        # loop because the sink queues synchronously inside `send` before its first await.
        if self.execution is None:
            return
        from agents.run_handle import frame

        sending = asyncio.get_running_loop().create_task(self.execution.emit(frame(kind, **data)))
        self.sending.add(sending)
        sending.add_done_callback(self.sending.discard)

    async def flush(self) -> None:
        """Before the run ends: every panel frame sent, so none arrives after the run's last frame."""
        while self.sending:
            await asyncio.gather(*list(self.sending), return_exceptions=True)

    async def _emit(self, kind: str, **data: Any) -> None:
        if self.execution is None:
            return
        from agents.run_handle import frame

        await self.execution.emit(frame(kind, **data))


# ------------------------------------------------------------------ the capability and its toolset


class _DelegateDeps:
    """Stands in for the parent's deps while the library starts one delegation: the library asks it for the
    delegate's deps (`clone_for_subagent`), and it answers with that delegate's own."""

    def __init__(self, parent: Any, delegate: BuiltDelegate | None, fresh: Any):
        self._parent, self._delegate, self._fresh = parent, delegate, fresh

    def clone_for_subagent(self, max_depth: int = 0) -> Any:
        return self._delegate.clone_deps() if self._delegate is not None else self._fresh()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parent, name)


@dataclass
class DelegatingToolset(WrapperToolset[Any]):
    owner: Delegation = field(repr=False, default=None)  # type: ignore[assignment]

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, Any]:
        tools = await super().get_tools(ctx)
        offered = self.owner.offered_tools()
        return {name: tool for name, tool in tools.items() if name in offered}

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: Any) -> Any:
        owner = self.owner
        if name not in ("task", "delegate"):
            return await super().call_tool(name, tool_args, ctx, tool)
        delegate = owner.delegates.get(str(tool_args.get("subagent_type", ""))) if name == "task" else None
        running = owner.running_count(ctx.run_id)
        if running >= owner.config.max_fanout:
            return FANOUT_REFUSAL.format(running=running, cap=owner.config.max_fanout)
        args = dict(tool_args)
        if name == "delegate":
            # A specialist the model wrote never asks the person: its instructions are not the author's.
            args["can_ask_questions"] = False
            args["capabilities"] = None
        parked = owner.parked_here(ctx.tool_call_id) if name == "task" else None
        if parked is not None:
            return await owner.resume_in_place(ctx, parked)
        delegate_ctx = dataclasses.replace(ctx, deps=_DelegateDeps(ctx.deps, delegate, owner.dynamic_deps))
        tokens = (CURRENT_TASK.set(CURRENT_TASK.get()), CURRENT_DEPTH.set(CURRENT_DEPTH.get()),
                  BACKGROUND.set(BACKGROUND.get()))
        args["mode"] = owner.resolve_mode(delegate, args)
        owner.started_by_call.pop(ctx.tool_call_id or "", None)
        try:
            result = await super().call_tool(name, args, delegate_ctx, tool)
        except ModelRetry as exc:
            owner.finish_call(ctx.tool_call_id, "failed")
            cause = exc.__cause__
            if isinstance(cause, DelegateCapExceeded):
                return str(cause).replace("This run was stopped", "The delegate was stopped")
            if isinstance(cause, BudgetExceeded):
                # The library contained it into a retry; the run's cap bound, so the run ends (with its spend).
                raise cause from None
            raise
        except ApprovalRequired:
            owner.finish_call(ctx.tool_call_id, "awaiting_approval")
            state = owner.parking_state(ctx.tool_call_id, delegate)
            if state is None:
                raise
            raise ApprovalRequired(metadata={"delegation": state}) from None
        except CallDeferred:
            owner.finish_call(ctx.tool_call_id, "awaiting_answer")
            state = owner.parking_state(ctx.tool_call_id, delegate)
            if state is None:
                raise
            raise CallDeferred(metadata={"delegation": state}) from None
        except UsageLimitExceeded:
            # The library lets a delegate's usage limit end the parent run so it cannot fan out into an empty
            # wallet; here the wallet is the budget guard's (BudgetExceeded above), and a usage limit is only
            # the delegate's own step limit: the parent reads it and goes on.
            owner.finish_call(ctx.tool_call_id, "failed")
            steps = delegate.max_steps if delegate is not None else owner.dynamic_steps
            return STEP_LIMIT.format(name=tool_args.get("subagent_type") or tool_args.get("name"), steps=steps)
        except BaseException:
            owner.finish_call(ctx.tool_call_id, "cancelled")
            raise
        finally:
            CURRENT_TASK.reset(tokens[0])
            CURRENT_DEPTH.reset(tokens[1])
            BACKGROUND.reset(tokens[2])
        owner.after_call(ctx.tool_call_id, args["mode"])
        return result


@dataclass
class Delegation(AbstractCapability[Any]):
    """The run-level half: offers the wrapped toolset, writes what the model is told, and stops every
    background delegation of the run before the run ends (the library's own finalizer, kept)."""

    config: SubagentsConfig
    delegates: dict[str, BuiltDelegate]
    missing: list[str]
    execution: RunHandle | None = field(repr=False)
    dynamic: Any = None
    usage: dict[str, DelegateUsage] = field(default_factory=dict, repr=False)
    panels: Panels | None = None
    dynamic_steps: int = 10
    # The run's own delegation (not a delegate's): the one whose written specialists a park keeps.
    root: bool = False
    # the parent's tool call id → the task id the library gave that delegation
    started_by_call: dict[str, str] = field(default_factory=dict)
    _resumed: set[str] = field(default_factory=set)
    _library: SubAgentToolset = field(init=False, repr=False)
    _toolset: DelegatingToolset = field(init=False, repr=False)

    def __post_init__(self) -> None:
        config = self.config
        configs = [self._library_config(d) for d in self.delegates.values()]
        dynamic = self.dynamic
        self._library = SubAgentToolset(
            subagents=configs,
            include_general_purpose=False,  # never offered: it would be a delegate nobody configured
            delegation_configuration="persisted_and_oneshot" if dynamic is not None else "default",
            default_agent_factory=dynamic.build if dynamic is not None else None,
            allowed_models=dynamic.models if dynamic is not None else None,
            max_agents=settings.MAX_DYNAMIC_SPECIALISTS,
            max_result_chars=config.max_result_chars,
            ask_user=self._ask_person,
            usage_limits=self._usage_limits,
            event_stream_handler_factory=self._handler_for,
            id="subagents",
        )
        self._toolset = DelegatingToolset(self._library, owner=self)
        if self.root and self.execution is not None:
            _ROOTS[str(self.execution.run.pk)] = self
            if dynamic is not None:
                self._restore_specialists()

    def _restore_specialists(self) -> None:
        """Specialists written before the run parked are registered again in the resumed run (the library's
        registry is built per agent, and a resumed run is a new build): a name created before an approval is
        still known after it (subagents-pydantic-ai#175). Not across turns: a new message is a new build with
        no parked state."""
        from subagents_pydantic_ai import SubAgentConfig as Config

        parked = getattr(self.execution.run, "parked_state", None) or {} if self.execution else {}
        for item in parked.get("dynamic_specialists") or []:
            if self.dynamic is None or item.get("model") not in self.dynamic.profiles:
                continue
            if self._library.registry.exists(item["name"]):
                continue
            config = Config(name=item["name"], description=item.get("description", ""),
                            instructions=item.get("instructions", ""), model=item["model"], can_ask_questions=False)
            try:
                self._library.registry.register(config, self.dynamic.build(config))
            except ValueError:  # past the cap: the rest are not kept
                break

    def parked_extras(self) -> dict[str, Any]:
        """What a park keeps of this run's delegation beyond the parked calls: the written specialists."""
        kept = [{"name": c["name"], "description": c.get("description", ""),
                 "instructions": c.get("instructions", ""), "model": str(c.get("model", ""))}
                for c in self._library.registry.list_configs()]
        return {"dynamic_specialists": kept} if kept else {}

    def _library_config(self, delegate: BuiltDelegate) -> SubAgentConfig:
        mode = delegate.mode or self.config.mode
        return SubAgentConfig(
            name=delegate.name, description=delegate.description, instructions="", agent=delegate.agent,
            # Only a sync delegate asks, and only when the author allowed it; the question goes to the person.
            # A remote agent never calls ask_parent: its questions come back as text (input-required).
            can_ask_questions=self.config.allow_questions and mode == "sync" and delegate.kind != "remote",
            preferred_mode=mode,  # type: ignore[typeddict-item]  # a Mode, typed str on BuiltDelegate
            extra={"delegate": delegate, "max_steps": delegate.max_steps},
        )

    # -------------------------------------------------------------- what the model is offered and told

    def offered_tools(self) -> set[str]:
        names = {"task"}
        if self.config.background_reachable([d.mode for d in self.delegates.values()]):  # type: ignore[misc]
            names |= LIFECYCLE
        if self.dynamic is not None:
            names |= DYNAMIC
        return names - NEVER_OFFERED

    def get_toolset(self) -> Any:
        return self._toolset

    def get_instructions(self) -> Any:
        return self.instructions_text()

    def instructions_text(self) -> str:
        lines = ["## Delegation", "",
                 "Hand self-contained work to these specialists with the `task` tool (by name). They do not "
                 "see this conversation: write each task so it stands on its own."]
        for d in self.delegates.values():
            mode = d.mode or self.config.mode
            lines.append(f"- **{d.name}** ({_mode_words(mode)}): {d.description}")
        if self.missing:
            lines.append(f"Named but unreachable in this run: {', '.join(self.missing)}.")
        if self.dynamic is not None:
            lines.append(f"You may write specialists of your own (create_agent, delegate; "
                         f"{_mode_words(self.config.mode)}). Models you may name: {', '.join(self.dynamic.models)}.")
        lines.append(f"At most {self.config.max_fanout} delegations run at once; past that a delegation is "
                     "refused and you can wait or do the work yourself.")
        return "\n".join(lines)

    # -------------------------------------------------------------- library callbacks

    def _usage_limits(self, ctx: RunContext[Any], config: SubAgentConfig) -> UsageLimits:
        steps = (config.get("extra") or {}).get("max_steps") or self.dynamic_steps
        return UsageLimits(request_limit=int(steps))

    def _handler_for(self, ctx: RunContext[Any], config: SubAgentConfig, task_id: str):
        """Called by the library once per delegation, with its task id, before it starts."""
        mode = "async" if BACKGROUND.get() else "sync"
        if self.panels is not None:
            self.panels.open(ctx, config, task_id, mode=mode, description=str(_task_text(ctx)))
        self.started_by_call[ctx.tool_call_id or ""] = task_id
        CURRENT_DEPTH.set(CURRENT_DEPTH.get() + 1)
        CURRENT_TASK.set(task_id)
        return self.panels.handler(task_id) if self.panels is not None else None

    async def _ask_person(self, question: str) -> str:
        """`ask_parent` of a sync delegate (allow_questions): the run's own ask_user channel answers it — the
        person — never a model. Where someone can answer, the call is deferred: the run parks on a question
        and the answer resumes the delegate in place; elsewhere it is answered at once as nobody can."""
        can_ask = self.execution is not None and bool((self.execution.run.options or {}).get("can_ask_user"))
        if not can_ask or BACKGROUND.get():
            return NOBODY_TO_ASK
        raise CallDeferred()

    def dynamic_deps(self) -> Any:
        return self.dynamic.deps() if self.dynamic is not None else None

    # -------------------------------------------------------------- modes, fan-out, endings

    def resolve_mode(self, delegate: BuiltDelegate | None, args: dict[str, Any]) -> str:
        mode = (delegate.mode if delegate is not None else None) or self.config.mode
        if mode == "auto":
            characteristics = TaskCharacteristics(
                estimated_complexity=args.get("complexity") or "moderate",
                requires_user_context=bool(args.get("requires_user_context")),
                may_need_clarification=bool(args.get("may_need_clarification")),
            )
            mode = decide_execution_mode(characteristics, SubAgentConfig(name="", description="", instructions=""))
        BACKGROUND.set(mode == "async")
        return mode

    def running_count(self, run_id: str | None) -> int:
        return sum(1 for h in self._library.task_manager.handles.values()
                   if not h.is_finished and (h.parent_run_id is None or h.parent_run_id == run_id))

    def finish_call(self, tool_call_id: str | None, status: str) -> None:
        task_id = self.started_by_call.get(tool_call_id or "")
        if task_id is not None and self.panels is not None:
            self.panels.close(task_id, status, self.usage.get(task_id))

    def after_call(self, tool_call_id: str | None, mode: str) -> None:
        task_id = self.started_by_call.get(tool_call_id or "")
        if task_id is None:
            return
        handle = self._library.task_manager.get_handle(task_id)
        if mode != "async":
            status = handle.status.value if handle is not None else "completed"
            if self.panels is not None:
                self.panels.close(task_id, status, self.usage.get(task_id))
            return
        task = self._library.task_manager.tasks.get(task_id)
        if task is None:
            self.finish_call(tool_call_id, handle.status.value if handle is not None else "completed")
            return

        def done(_: asyncio.Task[Any]) -> None:
            finished = self._library.task_manager.get_handle(task_id)
            if self.panels is not None:
                self.panels.close(task_id, finished.status.value if finished is not None else "completed",
                                  self.usage.get(task_id))

        task.add_done_callback(done)

    # -------------------------------------------------------------- a sync delegate parked on an approval

    def parking_state(self, tool_call_id: str | None, delegate: BuiltDelegate | None) -> dict[str, Any] | None:
        """What a sync delegate that stopped on a gated call leaves for the run to park with: the delegation's
        task id and the delegate's own conversation (so the approval resumes it where it stopped, not a new
        delegation), and the calls it stopped on (so the person approves the call the delegate made, not
        `task`). `parking.park` stores it in the run's parked state and writes the Approval for those calls."""
        task_id = self.started_by_call.get(tool_call_id or "")
        handle = self._library.task_manager.get_handle(task_id) if task_id else None
        if handle is None or delegate is None or handle.deferred_requests is None or not handle.message_history:
            return None
        state = _deferred_state(delegate, handle.deferred_requests)
        if state is None:
            return None
        return {"task_id": task_id, "name": delegate.name, "depth": CURRENT_DEPTH.get() + 1,
                "parent_call_id": tool_call_id, "messages": json.loads(handle.message_history), **state}

    def parked_here(self, tool_call_id: str | None) -> dict[str, Any] | None:
        """The delegation this run parked in, when it is being resumed on the same `task` call."""
        if self.execution is None or not tool_call_id:
            return None
        parked_state = getattr(self.execution.run, "parked_state", None) or {}
        state = (parked_state.get("delegations") or {}).get(tool_call_id)
        if state is None or state.get("name") not in self.delegates or tool_call_id in self._resumed:
            return None
        self._resumed.add(tool_call_id)
        return state

    async def resume_in_place(self, ctx: RunContext[Any], state: dict[str, Any]) -> Any:
        """Continue the parked delegate from its own history with the person's decision, under the task id it
        parked with. The library has no way to resume a suspended delegation (its handle is terminal at
        DEFERRED and its run kwargs take no deferred results), so this drives the delegate's agent directly,
        with the same guard, gate, limits and panel handler a fresh delegation gets."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter
        from pydantic_ai.tools import DeferredToolRequests

        delegate = self.delegates[state["name"]]
        task_id = state["task_id"]
        tokens = (CURRENT_TASK.set(CURRENT_TASK.get()), CURRENT_DEPTH.set(CURRENT_DEPTH.get()))
        try:
            if self.panels is not None:
                self.panels.open(ctx, self._library._compiled[delegate.name].config, task_id, mode="sync",
                                 description=str(_task_text(ctx)))
            self.started_by_call[ctx.tool_call_id or ""] = task_id
            CURRENT_DEPTH.set(CURRENT_DEPTH.get() + 1)
            CURRENT_TASK.set(task_id)
            handler = self.panels.handler(task_id) if self.panels is not None else None
            kwargs: dict[str, Any] = {}
            if handler is not None:
                kwargs["event_stream_handler"] = handler
            config = self._library._compiled[delegate.name].config
            if config.get("can_ask_questions"):
                # The same ask_parent the library gives a delegation, bound to the same channel (its private
                # helpers: the library has no public way to resume a delegation, see the docstring).
                from subagents_pydantic_ai.toolset import _create_ask_parent_toolset

                kwargs["toolsets"] = [_create_ask_parent_toolset()]
            from subagents_pydantic_ai._state import SubAgentState, bind_subagent_state

            decisions = await self._decisions(state)
            try:
                with bind_subagent_state(SubAgentState(ask_timeout_seconds=300.0, ask_callback=self._ask_person,
                                                       name=delegate.name)):
                    result = await delegate.agent.run(
                        None,
                        message_history=ModelMessagesTypeAdapter.validate_python(state["messages"]),
                        deferred_tool_results=decisions,
                        deps=delegate.clone_deps(),
                        usage_limits=UsageLimits(request_limit=delegate.max_steps),
                        **kwargs,
                    )
            except UsageLimitExceeded:
                self.finish_call(ctx.tool_call_id, "failed")
                return STEP_LIMIT.format(name=delegate.name, steps=delegate.max_steps)
            except DelegateCapExceeded as exc:
                self.finish_call(ctx.tool_call_id, "failed")
                return str(exc).replace("This run was stopped", "The delegate was stopped")
            except BaseException:
                self.finish_call(ctx.tool_call_id, "failed")
                raise
            output = result.output
            deferred = _deferred_state(delegate, output) if isinstance(output, DeferredToolRequests) else None
            if deferred is not None:
                # Parked again on a new decision: the same delegation waits again, under the same task id.
                again = {k: v for k, v in state.items() if k not in ("approvals", "questions", "asks")}
                again.update(deferred, messages=json.loads(result.all_messages_json()))
                if deferred.get("approvals"):
                    self.finish_call(ctx.tool_call_id, "awaiting_approval")
                    raise ApprovalRequired(metadata={"delegation": again})
                self.finish_call(ctx.tool_call_id, "awaiting_answer")
                raise CallDeferred(metadata={"delegation": again})
            self.finish_call(ctx.tool_call_id, "completed")
            return str(output)
        finally:
            CURRENT_TASK.reset(tokens[0])
            CURRENT_DEPTH.reset(tokens[1])

    async def _decisions(self, state: dict[str, Any]) -> Any:
        """The person's decisions for the calls the delegate stopped on: approvals are the `task` call's own
        (it runs again only when approved), a question's answer is read from its Question row."""
        from pydantic_ai.tools import DeferredToolResults

        approvals: dict[str, Any] = {str(a["tool_call_id"]): True for a in state.get("approvals", [])}
        calls: dict[str, Any] = {}
        if state.get("asks"):
            answer = await self.execution.db(self._answer_of, state["parent_call_id"]) if self.execution else None
            for ask in state["asks"]:
                calls[ask] = answer or "The person did not answer. Finish with what you have, and say so."
        return DeferredToolResults(approvals=approvals, calls=calls)

    def _answer_of(self, parent_call_id: str) -> str | None:
        from governance.models import Question

        assert self.execution is not None
        question = Question.objects.filter(run_id=self.execution.run.pk, tool_call_id=parent_call_id,
                                           status=Question.Status.ANSWERED).first()
        if question is None:
            return None
        return "; ".join(" ".join(str(x) for x in v) for v in (question.answers or {}).values()) or None

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> Any:
        try:
            return await handler()
        finally:
            # Background delegations live on the run, not the call that started them: none outlives it.
            await self._library.cancel_run_tasks(ctx.run_id)
            if self.panels is not None:
                await self.panels.flush()

    @property
    def task_manager(self):
        return self._library.task_manager


def _deferred_state(delegate: BuiltDelegate, deferred: Any) -> dict[str, Any] | None:
    """What a delegate stopped on, in the shape parking stores: its gated calls (the person approves these,
    with their exact arguments) or its `ask_parent` question (the person answers it on the run's ask_user
    card); None when it stopped on nothing this platform can put to a person."""
    from agents.run_handle import jsonable

    approvals = [
        {"tool_call_id": c.tool_call_id, "tool_name": c.tool_name, "args": jsonable(c.args_as_dict()),
         "tool_id": delegate.tool_ids.get(c.tool_name, c.tool_name),
         "capability_id": delegate.tool_capabilities.get(c.tool_name, "")}
        for c in deferred.approvals
    ]
    if approvals:
        return {"approvals": approvals}
    asks = [c for c in deferred.calls if c.tool_name == "ask_parent"]
    if not asks:
        return None
    question = str(asks[0].args_as_dict().get("question", ""))[:500]
    return {"asks": [c.tool_call_id for c in asks],
            "questions": [{"header": delegate.name[:25], "question": question, "options": [],
                           "multi_select": False}]}


def _mode_words(mode: str) -> str:
    return {"sync": "you wait for its answer", "async": "runs in the background: you get a task id",
            "auto": "waited for or in the background, decided per task"}.get(mode, mode)


def _task_text(ctx: RunContext[Any]) -> str:
    """The task the parent wrote, from the tool call being run (the factory is not given the arguments)."""
    for message in reversed(ctx.messages or []):
        for part in getattr(message, "parts", []):
            if getattr(part, "tool_call_id", None) == ctx.tool_call_id and hasattr(part, "args_as_dict"):
                try:
                    return str(part.args_as_dict().get("description", ""))
                except Exception:
                    return ""
    return ""
