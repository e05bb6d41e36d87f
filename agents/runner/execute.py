"""`execute(run_id)`: the one place every run of every surface executes.

Assemble from the frozen version → stream pydantic-ai events as frames → write the transcript,
tokens, cost and status. Every run of a process is a task on the process's runs loop (`loop.py`); database
work runs on a small process-wide thread pool, so the loop never blocks on the ORM; each piece of work takes a
connection from the process's pool and hands it back.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import uuid
from concurrent.futures import Future
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from django.db import close_old_connections, connection, transaction
from django.utils import timezone
from pydantic_ai import Agent, CancellationToken
from pydantic_ai.exceptions import RunCancelled, UsageLimitExceeded
from pydantic_ai.messages import (
    CapabilityEvent,
    FinalResultEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessagesTypeAdapter,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
)
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.usage import RunUsage, UsageLimits
from pydantic_ai_harness.compaction import resolve_context_window
from pydantic_ai_harness.guardrails import GuardrailError

from agenticos import metrics, secret_access, telemetry
from agenticos.models import Organization
from agenticos.queries import Insert, Loaded, Update, load_row, write_together
from agents import extensions
from agents.models import Agent as AgentRow
from agents.models import AgentVersion, ModelProfile, Run, RunStatus
from agents.run_handle import RunDeps, connection_pooled, db_pool, pooled
from agents.runner import assembly, attachments, checkpoint, recovery
from agents.runner.frames import ChannelLayerSink, CollectingSink, Sink, context_usage, frame
from agents.runner.gate import ApprovalGate, waiting_calls
from agents.runner.guard import BudgetGuard
from agents.runner.loop import runs_loop
from agents.runner.transcript import Transcript, jsonable
from agents.spec import AgentSpec, load_spec
from capabilities import lifecycle
from capabilities.lifecycle import CONTEXT_WINDOW
from governance import budgets, pricing
from governance.budgets import BudgetExceeded
from governance.models import SpendEntry

logger = logging.getLogger(__name__)

# What the person is told when a guardrail ends the run (never which term or edge: the list is the author's).
GUARDRAIL_MESSAGE = "This message could not be answered: one of this agent's guardrails stopped it."

# What the `complete` frame reports of a run.
USAGE_FIELDS = ("status", "input_tokens", "output_tokens", "requests", "cost_usd", "cost_is_partial",
                "context_tokens", "context_window")


def _model_window(model: Any) -> int | None:
    """The model's own context window (pydantic-ai's profile, then genai-prices), None when unknown or when the
    model cannot say (the demo model, a test double)."""
    if model is None:
        return None
    try:
        return resolve_context_window(model)
    except Exception:  # a model without an id the registry can parse: no window, not a failed run
        return None


@dataclass(frozen=True)
class AssemblyFailure:
    """The run was taken but cannot be assembled; the message is readable by whoever started it."""

    message: str


# The run as taken, with its agent (not its draft), version and organization. Hand-written from the models'
# fields: compiling the same statement through the ORM (an UPDATE in a WITH clause and a select_related
# read) cost about four times what PostgreSQL spends on it, on every turn.
CLAIM_LAYOUT = (Loaded(Run, "r"), Loaded(AgentRow, "a", exclude=("draft_spec",)), Loaded(AgentVersion, "v"),
                Loaded(Organization, "o"))


@lru_cache(maxsize=1)
def _claim_sql() -> str:
    quote = connection.ops.quote_name
    run, agent, version, organization = (quote(part.model._meta.db_table) for part in CLAIM_LAYOUT)
    columns = ", ".join(part.columns(quote) for part in CLAIM_LAYOUT)
    # Table and column names come from the models; every value is a parameter.
    return (
        f"WITH r AS (UPDATE {run} SET status = %s, started_at = COALESCE(started_at, %s), heartbeat_at = %s"  # noqa: S608
        f", trace_id = CASE WHEN trace_id = '' THEN %s ELSE trace_id END, worker = %s"
        f" WHERE id = %s AND status = %s AND NOT cancel_requested RETURNING *)"
        f" SELECT {columns} FROM r JOIN {agent} a ON a.id = r.agent_id JOIN {version} v ON v.id = r.version_id"
        f" JOIN {organization} o ON o.id = r.organization_id"
    )


class RunExecution:
    def __init__(self, run_id: Any, sink: Sink | None):
        self.run_id = run_id
        self.sink: Sink = sink or ChannelLayerSink(run_id)
        self.executor = db_pool()
        self.run: Run
        self.spec: AgentSpec
        self.free_model = False
        self.transcript: Transcript
        self.token = CancellationToken()
        self.tool_approval: dict[str, str] = {}
        self.tool_ids: dict[str, str] = {}
        self._response_no = 0
        self._tools_announced = False
        self._text_streamed = False
        self._reached_model = False
        # Taken over from a worker that died or shut down (its last event is `run_interrupted`).
        self.recovering = False
        # Taken over by another worker while this one stalled (loop.beat_rows): it writes nothing more.
        self.superseded = False
        # The visible names of the run's read-only tools, and what this execution's last checkpoint holds.
        self.read_only: frozenset[str] = frozenset()
        self.checkpointed: checkpoint.Written | None = None
        self.checkpoints_written = 0
        # The trace of this execution's span (stored on the run at its first start; "" without tracing), and
        # how the execution ended (for the span).
        self.trace_id = ""
        self.ended_status = ""
        # An evaluation case is answering this run's deferred calls (see _answered_in_place).
        self._case_answering = False
        # Set when the worker shuts down under the run: the run is stopped and ends `failed`, saying this.
        self.shutdown_reason = ""
        # Model requests answered but not yet in the ledger (see BudgetGuard).
        self.unrecorded_spend: list[SpendEntry] = []
        # What the run's tools and capabilities see (set by _assemble); compaction notes in its scratch.
        self.deps: RunDeps | None = None
        # The pydantic-ai capabilities built for this run (capabilities.lifecycle.RunHandle: a hook finds its own).
        self.built_capabilities: list[Any] = []
        # How full the context window was at the last model request (BudgetGuard notes it; Run.context_tokens),
        # and the window it is measured by (resolved on first use: _context_window).
        self.context_tokens: int | None = None
        self._window: tuple[int | None] | None = None
        self._window_sources: tuple[int | None, Any] = (None, None)
        # The secrets this execution opened, not yet in the audit log (set by _execution).
        self.secret_uses: secret_access.RunUses | None = None

    # ------------------------------------------------------------- plumbing

    async def db(self, fn, *args, **kwargs):
        # In a copy of the loop's context, as asyncio.to_thread does: what the run notes there (a secret it opened,
        # agenticos.secret_access) reaches this execution.
        work = partial(contextvars.copy_context().run, pooled, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self.executor, work)

    async def reaching_model(self) -> None:
        """Before a model request (the capabilities' RunHandle). Nothing to mark any more: a lost run goes on from
        its checkpoint whether or not it reached the model (agents.runner.recovery)."""
        self._reached_model = True

    def shut_down(self, reason: str) -> None:
        """The worker is going away: stop the run; it is handed back to the queue from its checkpoint (`reason` is
        recorded in its events). Called on the loop."""
        self.shutdown_reason = reason
        self.token.cancel()

    def holds_row(self) -> bool:
        """Whether this execution's run is still running here (not ending, not handed over). On the loop."""
        return not self.superseded and not self.ended_status and hasattr(self, "run")

    def lose_row(self) -> None:
        """Another worker took this run over (this one stalled past the stale limit): stop it here and write
        nothing more. On the loop."""
        logger.warning("run %s was taken over by another worker; stopping it here", self.run_id)
        self.superseded = True
        self.token.cancel()

    async def emit(self, payload: dict) -> None:
        try:
            await self.sink.send(payload)
        except Exception:  # a lost channel layer must not lose the run
            logger.warning("could not publish a frame for run %s", self.run_id, exc_info=True)

    def record_spend(self) -> None:
        """Write the spend not yet in the ledger, with the run's totals, in one statement. Sync (ORM)."""
        if not self.unrecorded_spend:
            return
        inserts, totals = self.spend_writes()
        write_together(*inserts, Update(Run.objects.filter(pk=self.run.pk), totals))

    def record_step(self, value: Any) -> None:
        """A response that calls tools: its spend and the run's checkpoint (`value`, checkpoint.step_value), in one
        statement. Sync (ORM)."""
        inserts, totals = self.spend_writes()
        write_together(*inserts, Update(Run.objects.filter(pk=self.run.pk), {**totals, "checkpoint": value}))

    def spend_writes(self) -> tuple[list[Insert], dict[str, Any]]:
        """The insert of the unrecorded ledger rows, and the run-row update that adds them to the run's totals
        (for the caller to carry out with its own writes); they count as recorded from here on."""
        entries, self.unrecorded_spend = self.unrecorded_spend, []
        inserts, totals = budgets.ledger_writes(entries)
        inserts = [*inserts, *self.secret_use_writes()]
        if self.context_tokens is not None:
            totals = {**totals, "context_tokens": self.context_tokens, "context_window": self.context_window()}
        return inserts, totals

    def secret_use_writes(self) -> list[Insert]:
        """The audit events of the secrets the run opened since its last write (once per secret and run), to go
        in with that write's statement: a secret's use costs the run no statement of its own."""
        if self.secret_uses is None:
            return []
        rows = secret_access.pending_rows(self.secret_uses, organization_id=self.run.organization_id,
                                          user_id=self.run.user_id, api_key_id=self.run.api_key_id,
                                          surface=self.run.surface)
        return [Insert(rows)] if rows else []

    def context_window(self) -> int | None:
        """The window the run's context fill is measured by: the one a binding set (compaction's `context_window`,
        noted in the run's scratch), else the model profile's, else the model's own (its profile in pydantic-ai,
        then genai-prices). None when none is known — the fill is then not shown as a share."""
        if self._window is None:
            override = self.deps.scratch.get(CONTEXT_WINDOW) if self.deps is not None else None
            profile_window, model = self._window_sources
            self._window = (override or profile_window or _model_window(model),)
        return self._window[0]

    async def _close_sink(self) -> None:
        close = getattr(self.sink, "close", None)  # a caller's own sink may have nothing to close
        if close is not None:
            try:
                await close()
            except Exception:
                logger.warning("could not close the frame sink of run %s", self.run_id, exc_info=True)

    def _close_db(self) -> None:
        # Without a pool (DB_POOL_MAX_SIZE=0) this is where the thread's connection is closed.
        close_old_connections()

    # ------------------------------------------------------------- lifecycle

    async def execute(self) -> None:
        try:
            started = await self.db(self._start_and_assemble)
            if started is None:
                return
            runs_loop().register(self)
            metrics.run_started(self.run)
            if self.recovering:
                await self._announce_resumed()
            try:
                await self._run(started)
            finally:
                runs_loop().unregister(self)
                metrics.run_left(self.run)
        finally:
            await self._close_sink()
            if not connection_pooled():  # pooled connections went back after each piece of work
                await self.db(self._close_db)

    async def _announce_resumed(self) -> None:
        step = (self.run.checkpoint or {}).get("steps", 0)
        await self.db(recovery.record_resumed, self.run, step)
        metrics.run_resumed(self.run)
        # The watcher redraws the turn as the checkpoint has it (what streamed after it is done again); thinking
        # stays out, as it does of the public frames.
        await self.emit(frame("resumed", run_id=str(self.run.pk), from_step=step,
                              parts=[p for p in self.transcript.parts if p["type"] != "thinking"]))

    def _start_and_assemble(self) -> tuple[Agent[RunDeps, Any], dict[str, Any]] | AssemblyFailure | None:
        """Take the run and build its agent in one trip to a DB thread: None when there is nothing to run."""
        if not self._load_and_start():
            return None
        try:
            return self._assemble()
        except assembly.AssemblyError as exc:
            return AssemblyFailure(str(exc))

    def _load_and_start(self) -> bool:
        """Take the run if it is still queued and nobody asked to stop it, and load it with what the runner
        reads of its relations (the agent's name, the frozen spec, the organization's cap): one statement."""
        close_old_connections()
        try:
            run_id = uuid.UUID(str(self.run_id))
        except ValueError:
            return False
        now = timezone.now()
        with connection.cursor() as cursor:
            cursor.execute(_claim_sql(), [RunStatus.RUNNING, now, now, self.trace_id, checkpoint.worker_name(), run_id,
                                          RunStatus.QUEUED])
            row = cursor.fetchone()
        if row is None:  # gone, taken by another worker, ended, or stopped while it waited
            Run.objects.filter(pk=run_id, status=RunStatus.QUEUED, cancel_requested=True).update(
                status=RunStatus.CANCELLED, finished_at=now)
            return False
        run, agent, version, organization = load_row(row, CLAIM_LAYOUT)
        run.agent, run.version, run.organization = agent, version, organization  # type: ignore[attr-defined]
        self.run = run  # type: ignore[assignment]
        # Handed back by a lost or stopping worker (finish.sweep_stale_runs, _hand_back): go on from its checkpoint.
        events = self.run.events
        self.recovering = bool(events) and events[-1].get("type") == "run_interrupted"
        return True

    async def _run(self, setup) -> None:
        run = self.run
        if isinstance(setup, AssemblyFailure):
            await self._fail({"type": "AssemblyError", "message": setup.message}, setup.message)
            return
        agent, run_kwargs = setup
        try:
            result = await agent.run(
                event_stream_handler=self._on_events,
                cancellation_token=self.token,
                usage_limits=UsageLimits(request_limit=self.spec.max_steps),
                **run_kwargs,
            )
            if (answerer := extensions.deferred_answerer(run.surface)) is not None:
                result = await self._answered_in_place(answerer, agent, run_kwargs, result)
        except BudgetExceeded as exc:
            await self._end(RunStatus.BUDGET_EXCEEDED, error={"type": "BudgetExceeded", "message": str(exc)},
                            error_frame=str(exc), code="budget_exceeded")
            return
        except GuardrailError as exc:
            # A guardrail's verdict (capabilities/guardrails): its own outcome, the person told only that it stopped.
            await self._end(RunStatus.GUARDRAIL_BLOCKED, error={"type": "GuardrailBlocked", "message": str(exc)},
                            error_frame=GUARDRAIL_MESSAGE, code="guardrail_blocked")
            return
        except RunCancelled:
            if self.superseded:
                return
            if self.shutdown_reason:
                await self.db(self._hand_back)
                return
            await self._end(RunStatus.CANCELLED, error={"type": "Cancelled", "message": "Stopped by request."},
                            error_frame="The run was stopped.", code="cancelled")
            return
        except UsageLimitExceeded as exc:
            message = f"The run reached its step limit ({self.spec.max_steps} model requests)."
            await self._fail({"type": "UsageLimitExceeded", "message": message, "detail": str(exc)[:200]}, message)
            return
        except Exception as exc:
            from agents.providers import describe_provider_error

            summary = describe_provider_error(exc)
            logger.warning("run %s failed: %s", run.pk, summary)
            await self._fail(summary, "The model provider returned an error; the run was stopped.")
            return
        output = result.output
        if isinstance(output, DeferredToolRequests):
            await self._park(output, result.all_messages())
        else:
            await self._complete(str(output), result.all_messages())

    async def _answered_in_place(self, answerer, agent, run_kwargs: dict[str, Any], result):
        """A surface that answers its own runs' deferred calls (agents.extensions: evaluation cases answer their
        gated calls and ask_user questions), so the run goes on instead of parking; a call it leaves unanswered
        parks as on any surface."""
        for _round in range(answerer.max_rounds):
            if not isinstance(result.output, DeferredToolRequests):
                break
            answers = await self.db(answerer.answer, self.run, result.output, self.tool_ids)
            if answers is None:
                break
            self._case_answering = True
            result = await agent.run(
                event_stream_handler=self._on_events,
                cancellation_token=self.token,
                usage_limits=UsageLimits(request_limit=self.spec.max_steps),
                usage=result.usage,
                deps=run_kwargs["deps"],
                message_history=result.all_messages(),
                deferred_tool_results=answers,
            )
        return result

    # ------------------------------------------------------------- assembly

    def _assemble(self) -> tuple[Agent[RunDeps, Any], dict[str, Any]]:
        run = self.run
        try:
            self.spec = load_spec(run.version.spec)
        except Exception as exc:
            raise assembly.AssemblyError(f"The published version cannot be loaded: {exc}") from exc
        self.spec = assembly.with_channel_grants(self.spec, run)
        profile = assembly.model_profile(run, self.spec)
        deps = RunDeps(
            run_id=str(run.pk),
            organization_id=str(run.organization_id),
            agent_id=str(run.agent_id),
            version_id=str(run.version_id),
            surface=run.surface,
            conversation_id=str(run.conversation_id) if run.conversation_id else None,
            user_id=run.user_id,
            can_ask_user=bool(run.options.get("can_ask_user")),
        )
        deps.execution = self  # what a tool may use of the run (capabilities.lifecycle.RunHandle)
        if run.parked_state:
            lifecycle.on_resume(run, deps.scratch)
        self.deps = deps
        built = assembly.build_capabilities(self.spec, deps, run)
        self.tool_approval = built.approval
        self.tool_ids = built.tool_ids
        self.built_capabilities = built.capabilities
        self.transcript = Transcript(run, built.tool_capabilities)
        self.read_only = built.read_only
        model = assembly.build_model(profile)
        self.free_model = pricing.is_free(model)
        self._window_sources = (profile.context_window, model)
        agent = Agent(
            model,
            output_type=[str, DeferredToolRequests],
            instructions=assembly.instructions(self.spec, run, built),
            deps_type=RunDeps,
            toolsets=built.toolsets,
            capabilities=[BudgetGuard(execution=self), ApprovalGate(approval=built.approval, waiting=(
                waiting_calls(run.conversation_id, exclude_run=run.pk) if "required" in built.approval.values()
                else ())), *extensions.run_capabilities(run, built.read_only),
                *built.capabilities],
            model_settings=assembly.model_settings(profile, self.spec),
            retries=2,
        )
        kwargs: dict[str, Any] = {"deps": deps}
        if self.recovering and (run.checkpoint or run.parked_state):
            kwargs.update(self._resumed_kwargs())
        elif run.parked_state:
            stored = lifecycle.restore_history(run, run.parked_state["messages"])
            kwargs["message_history"] = ModelMessagesTypeAdapter.validate_python(stored)
            kwargs["deferred_tool_results"] = self._deferred_results()
        else:
            current, history = assembly.turn_and_history(run)
            files = (current or {}).get("attachments") or []
            workspace_id = deps.scratch.get("workspace_id")
            landed = attachments.land(workspace_id, str(run.pk), files) if workspace_id and files else {}
            kwargs["user_prompt"] = attachments.user_prompt(run.prompt, files, landed)
            kwargs["message_history"] = history
        return agent, kwargs

    def _resumed_kwargs(self) -> dict[str, Any]:
        """Go on from the last checkpoint (or from where the run parked, when its lost execution had resumed a
        park and not reached a step since): the history, what each open call gets, the steps taken so far."""
        run = self.run
        parked = self._deferred_results() if run.parked_state else None
        if run.checkpoint:
            messages = checkpoint.restore(run.checkpoint)
            self.transcript.parts = checkpoint.restored_parts(run.checkpoint)
        else:
            stored = lifecycle.restore_history(run, run.parked_state["messages"])  # type: ignore[index]
            messages = ModelMessagesTypeAdapter.validate_python(stored)
        kwargs: dict[str, Any] = {"message_history": messages,
                                  "usage": RunUsage(requests=(run.checkpoint or {}).get("steps", 0))}
        results = checkpoint.resume_results(run, messages, self.read_only, parked)
        if results is not None:
            kwargs["deferred_tool_results"] = results
        return kwargs

    def _deferred_results(self) -> DeferredToolResults:
        from governance.models import Approval, Question

        approvals: dict[str, Any] = {}
        for approval in Approval.objects.filter(run=self.run):
            if approval.status == Approval.Status.APPROVED:
                approvals[approval.tool_call_id] = True
            elif approval.status == Approval.Status.REJECTED:
                note = f" Their note: {approval.note}" if approval.note else ""
                approvals[approval.tool_call_id] = ToolDenied(
                    f"A person rejected this call; do not retry it.{note}"
                )
            else:
                approvals[approval.tool_call_id] = ToolDenied("Nobody approved this call in time; it was not run.")
        calls: dict[str, Any] = {}
        delegations = (self.run.parked_state or {}).get("delegations") or {}
        for question in Question.objects.filter(run=self.run):
            if question.tool_call_id in delegations:  # a delegate asked: its `task` call resumes it in place
                approvals[question.tool_call_id] = True
                continue
            if question.status == Question.Status.ANSWERED:
                calls[question.tool_call_id] = question.answers
            else:
                calls[question.tool_call_id] = "The person did not answer."
        return DeferredToolResults(approvals=approvals, calls=calls)

    # ------------------------------------------------------------- streaming

    async def _on_events(self, ctx, events) -> None:
        async for event in events:
            await self._on_event(event)

    async def _on_event(self, event) -> None:
        tr = self.transcript
        if isinstance(event, PartStartEvent):
            if event.index == 0:
                self._response_no += 1
            key = (self._response_no, event.index)
            part = event.part
            if isinstance(part, TextPart):
                await self.emit(frame("part_start", index=event.index, part_type="text"))
                if part.content:
                    tr.add_text("text", part.content, key)
                    self._text_streamed = True
                    await self.emit(frame("text_delta", index=event.index, content=part.content))
            elif isinstance(part, ThinkingPart):
                await self.emit(frame("part_start", index=event.index, part_type="thinking"))
                if part.content:
                    tr.add_text("thinking", part.content, key)
                    await self.emit(frame("thinking_delta", index=event.index, content=part.content))
            elif isinstance(part, ToolCallPart):
                # The tool's name and call id ride on the start so a surface can draw what a call is writing
                # while its arguments stream (visuals grow as `draw` writes them).
                await self.emit(frame("part_start", index=event.index, part_type="tool-call",
                                      tool_name=part.tool_name, tool_call_id=part.tool_call_id))
        elif isinstance(event, PartDeltaEvent):
            key = (self._response_no, event.index)
            delta = event.delta
            if isinstance(delta, TextPartDelta) and delta.content_delta:
                tr.add_text("text", delta.content_delta, key)
                self._text_streamed = True
                await self.emit(frame("text_delta", index=event.index, content=delta.content_delta))
            elif isinstance(delta, ThinkingPartDelta) and delta.content_delta:
                tr.add_text("thinking", delta.content_delta, key)
                await self.emit(frame("thinking_delta", index=event.index, content=delta.content_delta))
            elif isinstance(delta, ToolCallPartDelta) and delta.args_delta:
                args_delta = delta.args_delta if isinstance(delta.args_delta, str) else json.dumps(delta.args_delta)
                await self.emit(frame("tool_call_delta", index=event.index, args_delta=args_delta))
        elif isinstance(event, FinalResultEvent):
            await self.emit(frame("final_result_start", tool_name=event.tool_name))
        elif isinstance(event, CapabilityEvent) and callable(as_frame := getattr(event, "as_frame", None)):
            # A capability's own event that says what to show (compaction's "summarizing…").
            await self.emit(as_frame())
        elif isinstance(event, FunctionToolCallEvent):
            call = event.part
            if event.args_valid is None and (self.run.parked_state or self._case_answering or self.recovering):
                # A resumed deferred call: it was announced before the park.
                return
            if not self._tools_announced:
                self._tools_announced = True
                await self.emit(frame("call_tools_start"))
            args = call.args_as_dict() if hasattr(call, "args_as_dict") else call.args
            tr.add_tool(call.tool_call_id)
            await self.db(tr.tool_started, call.tool_call_id, call.tool_name, args)
            await self.emit(frame("tool_call", tool_call_id=call.tool_call_id, tool_name=call.tool_name,
                                  args=jsonable(args)))
        elif isinstance(event, FunctionToolResultEvent):
            self._tools_announced = False
            returned = event.part
            content = getattr(returned, "content", None)
            ok = getattr(returned, "part_kind", "") == "tool-return" and getattr(
                returned, "outcome", "success") in ("success", None)
            metrics.tool_call(tr.tool_capabilities.get(getattr(returned, "tool_name", None) or "", ""), ok=ok)
            if (self.run.parked_state or self._case_answering or self.recovering) and not any(
                p.get("tool_call_id") == returned.tool_call_id for p in tr.parts if p["type"] == "tool"
            ):
                tr.add_tool(returned.tool_call_id)
            await self.db(tr.tool_finished, returned.tool_call_id, content, ok=ok)
            await self.emit(frame("tool_result", tool_call_id=returned.tool_call_id, content=jsonable(content),
                                  ok=ok))

    # ------------------------------------------------------------- endings

    async def _complete(self, output: str, messages: list) -> None:
        """`messages`: the run's, for the capabilities that keep them for the next turns (compaction)."""
        if not self._text_streamed and output:
            # A provider that did not stream deltas: the final output is the only copy of the answer.
            self.transcript.add_text("text", output, (self._response_no + 1, 0))
        message_id, complete = await self.db(self._finish_and_describe, RunStatus.COMPLETED, output=output)
        # Before the answer is announced: a next turn sent on seeing it replays what is kept.
        await self.db(lifecycle.keep_history, self, messages, message_id)
        if message_id:
            await self.emit(frame("message_saved", message_id=message_id, role="assistant"))
            await self.db(lifecycle.after_answer, self, message_id)
        await self.emit(frame("final_result", output=output))
        await self.emit(complete)

    async def _park(self, requests: DeferredToolRequests, messages) -> None:
        from agents.runner import parking

        status, frames = await self.db(self._park_and_forget, parking.park, requests, messages)
        self.ended_status = status
        metrics.run_finished(self.run, status)
        for payload in frames:
            await self.emit(payload)
        await self.emit(frame("final_result", output=""))
        await self.emit(await self.db(self._complete_frame))

    def _park_and_forget(self, park, requests, messages):
        return park(self, requests, messages)

    def _hand_back(self) -> None:
        """The worker shuts down under the run: back to the queue for the next worker, which goes on from the
        checkpoint (what this execution spent is recorded; what streamed after the checkpoint is done again).
        Sync (ORM)."""
        inserts, spend = self.spend_writes()
        back = write_together(*inserts, Update(Run.objects.filter(pk=self.run.pk, status=RunStatus.RUNNING), {
            "status": RunStatus.QUEUED, "heartbeat_at": timezone.now(), "worker": "",
            "events": checkpoint.appended("events", checkpoint.event(
                "run_interrupted", reason="shutdown", worker=checkpoint.worker_name(), detail=self.shutdown_reason,
                last_heartbeat=timezone.now().isoformat())),
            **spend,
        }, returning=("id",)))[-1]
        self.ended_status = RunStatus.QUEUED
        if back:
            recovery.requeue(self.run.pk)

    async def _fail(self, error: dict, message: str) -> None:
        await self._end(RunStatus.FAILED, error=error, error_frame=message, code="run_failed")

    async def _end(self, status: str, *, error: dict, error_frame: str, code: str) -> None:
        await self.db(self._finish, status, error=error)
        await self.emit(frame("error", message=error_frame, code=code, run_id=str(self.run.pk), status=status))

    def _finish(self, status: str, *, output: str = "", error: dict | None = None) -> tuple[int | None, dict | None]:
        """Write the ending — the answer, the run's status and spend — in one statement. Returns the answer's
        message id and the run's totals as they now stand (for the `complete` frame)."""
        transcript = getattr(self, "transcript", None)
        message, answer = transcript.answer_writes() if transcript is not None else (None, [])
        inserts, spend = self.spend_writes()
        ending = Update(Run.objects.filter(pk=self.run.pk), {
            "status": status,
            "output": output or (transcript.text if transcript is not None else ""),
            "error": error or {},
            "finished_at": timezone.now(),
            "parked_state": None,
            "checkpoint": None,
            **spend,
        }, returning=USAGE_FIELDS)
        failed = status in (RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.BUDGET_EXCEEDED,
                            RunStatus.GUARDRAIL_BLOCKED)
        # A failed run's capability state is reset with its ending (lifecycle.on_failed); a completed one is a
        # single statement.
        with transaction.atomic() if failed else nullcontext():
            totals = write_together(*answer, *inserts, ending)[-1]
            if failed:
                lifecycle.on_failed(self.run)
        self.ended_status = status
        metrics.run_finished(self.run, status)
        extensions.run_ended(self.run, status)
        return (message.pk if message else None), totals

    def _finish_and_describe(self, status: str, *, output: str) -> tuple[int | None, dict]:
        message_id, totals = self._finish(status, output=output)
        return message_id, self._complete_frame(totals)

    def _complete_frame(self, run: dict | None = None) -> dict:
        if run is None:
            run = Run.objects.filter(pk=self.run.pk).values(*USAGE_FIELDS).get()
        return frame(
            "complete",
            run_id=str(self.run.pk),
            status=run["status"],
            usage={
                "input_tokens": run["input_tokens"],
                "output_tokens": run["output_tokens"],
                "requests": run["requests"],
                "cost_usd": f"{run['cost_usd']:f}",
                "cost_is_partial": run["cost_is_partial"],
                **context_usage(run),
            },
        )


async def _execution(run_id: Any, sink: Sink | None, parent: Any = None) -> None:
    # Built on the loop: its sink's queue and events belong to it. `parent`: the starter's trace context.
    execution = RunExecution(run_id, sink)
    with telemetry.run_span(run_id, parent) as span, secret_access.run_scope(run_id) as secret_uses:
        execution.trace_id = telemetry.trace_id(span)
        execution.secret_uses = secret_uses
        try:
            await execution.execute()
        except Exception as exc:
            # Nobody awaits a started run's future: without this, a crash (the database gone mid-claim, a bug)
            # would leave no word anywhere and the run unfinished until the stale sweep.
            logger.exception("run %s: the execution crashed", run_id)
            await execution.db(_fail_crashed, run_id, exc)
        finally:
            telemetry.describe_run(span, execution)


def _fail_crashed(run_id: Any, exc: Exception) -> None:
    """End a run whose execution crashed while it was running (a queued one is left to the sweeps: it may not
    have been taken). Its transcript and spend stay as written. Sync (ORM); a database still gone is logged."""
    try:
        Run.objects.filter(pk=run_id, status=RunStatus.RUNNING).update(
            status=RunStatus.FAILED, finished_at=timezone.now(),
            error={"type": "ExecutionCrashed", "message": f"{type(exc).__name__}: {str(exc)[:300]}"})
    except Exception:
        logger.warning("run %s: could not record that its execution crashed", run_id, exc_info=True)


def start(run_id: Any) -> Future:
    """Hand a run to this process's runs loop and return once it is admitted (see loop.RunLoop.admit: this
    waits while the process holds RUN_MAX_CONCURRENT runs, and raises loop.Draining while it shuts down)."""
    return runs_loop().admit(partial(_execution, run_id, None, telemetry.current_context()))


def execute(run_id: Any, sink: Sink | None = None) -> None:
    """Run one queued run to its end (or its next park) on the runs loop, and wait for it. Safe to call twice:
    a second call is a no-op."""
    runs_loop().admit(partial(_execution, run_id, sink, telemetry.current_context())).result()


def execute_collecting(run_id: Any) -> list[dict]:
    """Execute and return the frames (also published to the group). For the API's wait mode and tests."""
    sink = CollectingSink(forward=ChannelLayerSink(run_id))
    execute(run_id, sink)
    return sink.frames


__all__ = ["execute", "execute_collecting", "start", "RunExecution", "ModelProfile"]
