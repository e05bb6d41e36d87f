"""A run's checkpoint: what it needs to go on from its last step on another worker.

After each model response that calls tools, the run's row gets (in the statement that records that response's
spend, so no extra round trip) its pydantic-ai messages through that response, the transcript's parts so far,
the response's calls with whether each is read-only, and the step count. Only the messages added since the
previous checkpoint are sent and appended in PostgreSQL (`jsonb ||`), so a step costs its own size, not the
run's. Each tool result is already durable on its own: the call's ToolCall row (written as it finishes) holds
its result and status, and that row is the checkpoint of the tool step.

Resuming (`resume_results`): the run's history is the checkpoint's messages; of the last response's calls,
  - one whose row finished (ok or error) is never run again: its stored result goes to the model;
  - one in flight at the death (its row `running`, or parked and approved) is run again when it is read-only,
    and otherwise is not: the model reads that it was interrupted and may or may not have happened — unless a
    person had approved it (its binding asks for approval), when it goes back to the approval gate
    (`ASK_AGAIN`): the same approval waits for a decision again, and nothing runs unasked;
  - one never started runs now — unless some of its siblings did start, when (pydantic-ai takes results for all
    of a response's calls at once, and starting it here would pass its approval gate) the model is told it did
    not run and may call it again.
A model request cut mid-stream is not in the checkpoint (it ends at the previous response), so it is sent again.

Read-only: a tool a capability declares not side-effecting (`ToolDecl.side_effecting=False`), or a function
tool whose pydantic-ai metadata says `read_only` (a custom REST tool using GET). Anything else — an MCP tool,
a tool nobody described — counts as side-effecting: not running it twice is the safe side.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import JSONField
from django.db.models.expressions import RawSQL
from django.utils import timezone
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.tools import DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import FunctionToolset

from agenticos import metrics
from agents.models import ToolCall
from capabilities import lifecycle

if TYPE_CHECKING:
    from agents.runner.execute import RunExecution

INTERRUPTED = ("This call was interrupted: the worker running it stopped before its result came back. It may or "
               "may not have happened. Check before doing it again, and tell the person if it matters.")
# DeferredToolResults metadata of an approved call a lost worker left in flight: the gate asks a person again.
ASK_AGAIN = "interrupted_ask_again"
NOT_STARTED = ("This call did not run: the run was interrupted before it started. Call it again if it is still "
               "needed.")


def worker_name() -> str:
    """This process, as a run's `worker` and its events name it (not cached: a forked child is another)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def appended(column: str, value: Any) -> RawSQL:
    """`column || value` for a JSON list column: append one element (or several, given a list) in the statement."""
    items = value if isinstance(value, list) else [value]
    # The column name is ours (a model field's); the value is a parameter.
    return RawSQL(f"COALESCE({column}, '[]'::jsonb) || %s::jsonb", (json.dumps(items, default=str),),  # noqa: S611
                  output_field=JSONField())


def event(kind: str, **details: Any) -> dict[str, Any]:
    return {"type": kind, "at": timezone.now().isoformat(), **details}


def read_only_tools(routes: dict[str, Any], toolsets: list[Any]) -> frozenset[str]:
    """The visible names of this run's tools that only read (see the module docstring)."""
    names = {name for name, route in routes.items() if not route.side_effecting and not route.provider_executed}

    def visit(toolset: Any) -> None:
        if isinstance(toolset, FunctionToolset):
            names.update(name for name, tool in toolset.tools.items() if (tool.metadata or {}).get("read_only"))

    for toolset in toolsets:
        toolset.apply(visit)
    return frozenset(names)


@dataclass
class Written:
    """What the last checkpoint of this execution holds: how many messages, and the first and the last request
    (the same objects in the run's list while nothing rewrote its history)."""

    count: int
    first: ModelMessage
    anchor: ModelMessage


def step_value(ex: RunExecution, messages: list[ModelMessage], response: ModelResponse, steps: int) -> Any:
    """The new value of the run's `checkpoint` after `response` (which calls tools): a whole checkpoint the first
    time or after a capability rewrote the history (compaction), else an expression appending what is new."""
    whole = [*messages, response]
    before = ex.checkpointed
    growing = (before is not None and len(messages) >= before.count and messages[0] is before.first
               and messages[before.count - 2] is before.anchor)
    new = whole[before.count:] if growing and before is not None else whole
    dumped = ModelMessagesTypeAdapter.dump_python(new, mode="json")
    state = {
        "steps": steps,
        "parts": [dict(part) for part in ex.transcript.parts],
        "calls": [{"id": call.tool_call_id, "name": call.tool_name, "read_only": call.tool_name in ex.read_only}
                  for call in response.tool_calls],
        "at": timezone.now().isoformat(),
    }
    ex.checkpointed = Written(count=len(whole), first=whole[0], anchor=messages[-1])
    ex.checkpoints_written += 1
    if not growing:
        return {"messages": dumped, **state}
    # Replace the state's keys and extend its messages; the column is ours, every value a parameter.
    return RawSQL("jsonb_set(checkpoint, '{messages}', (checkpoint -> 'messages') || %s::jsonb) || %s::jsonb",
                  (json.dumps(dumped), json.dumps(state, default=str)), output_field=JSONField())


def restored_parts(checkpoint: dict[str, Any]) -> list[dict[str, Any]]:
    """The transcript's parts as of the checkpoint, with the last response's calls (announced just after it)."""
    parts = [dict(part) for part in checkpoint.get("parts", [])]
    present = {part.get("tool_call_id") for part in parts if part.get("type") == "tool"}
    parts += [{"type": "tool", "tool_call_id": call["id"]} for call in checkpoint.get("calls", [])
              if call["id"] not in present]
    return parts


def restore(checkpoint: dict[str, Any]) -> list[ModelMessage]:
    return ModelMessagesTypeAdapter.validate_python(checkpoint["messages"])


def resume_results(run: Any, messages: list[ModelMessage], read_only: frozenset[str],
                   parked: DeferredToolResults | None) -> DeferredToolResults | None:
    """What each open call of the history's last response gets on resuming (module docstring). None when no call
    of it had started: pydantic-ai then runs them as it would have, gates included. Sync (ORM)."""
    last = messages[-1] if messages else None
    if not isinstance(last, ModelResponse) or not last.tool_calls:
        return None
    ids = [call.tool_call_id for call in last.tool_calls]
    rows = {row.tool_call_id: row for row in ToolCall.objects.filter(run=run, tool_call_id__in=ids)}
    decided = parked.to_tool_call_results() if parked is not None else {}
    if not rows and not decided:
        return None
    in_flight = [row for row in rows.values()
                 if row.status in (ToolCall.Status.RUNNING, ToolCall.Status.UNFINISHED)]
    if in_flight:
        # What such a call left going outside the lost worker (a coding agent's sandboxd task) is stopped before
        # the model hears it was interrupted, so nothing goes on working — or spending — unseen.
        lifecycle.on_interrupted(run, in_flight)
    approvals: dict[str, Any] = {}
    calls: dict[str, Any] = {}
    metadata: dict[str, dict[str, Any]] = {}
    for call in last.tool_calls:
        row = rows.get(call.tool_call_id)
        decision = decided.get(call.tool_call_id)
        status = row.status if row is not None else None
        if status == ToolCall.Status.OK:
            calls[call.tool_call_id] = row.result  # type: ignore[union-attr]
            outcome = "reused"
        elif status == ToolCall.Status.ERROR:
            calls[call.tool_call_id] = ToolFailed(str(row.result))  # type: ignore[union-attr]
            outcome = "reused"
        elif status in (ToolCall.Status.RUNNING, ToolCall.Status.UNFINISHED) or (
                status == ToolCall.Status.PARKED and isinstance(decision, ToolApproved)):
            if call.tool_name in read_only:
                approvals[call.tool_call_id] = True
                outcome = "rerun"
            elif isinstance(decision, ToolApproved):  # a person approved it: the gate asks again
                approvals[call.tool_call_id] = True  # into the toolset, where the gate parks it again
                metadata[call.tool_call_id] = {ASK_AGAIN: True}
                outcome = "asked_again"
            else:
                calls[call.tool_call_id] = ToolFailed(INTERRUPTED)
                outcome = "interrupted"
        elif isinstance(decision, ToolApproved | ToolDenied):
            approvals[call.tool_call_id] = decision
            outcome = "decided"
        elif decision is not None:
            calls[call.tool_call_id] = decision
            outcome = "decided"
        else:
            calls[call.tool_call_id] = ToolFailed(NOT_STARTED)
            outcome = "not_started"
        metrics.resumed_tool_call(outcome)
    return DeferredToolResults(approvals=approvals, calls=calls, metadata=metadata)
