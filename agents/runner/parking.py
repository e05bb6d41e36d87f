"""Parking a run: a gated tool call waits for a person's decision, an ask_user call for an answer.

The pydantic-ai conversation state is stored on the run so `resume` continues the same version
from the call where it stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.tools import DeferredToolRequests

from agenticos.queries import Update, write_together
from agents.models import Run, RunStatus
from agents.runner.checkpoint import ASK_AGAIN
from agents.runner.frames import frame
from agents.runner.transcript import jsonable
from capabilities import lifecycle
from governance import signals
from governance.models import Approval, Question

if TYPE_CHECKING:
    from agents.runner.execute import RunExecution


def park(ex: RunExecution, requests: DeferredToolRequests, messages) -> tuple[str, list[dict[str, Any]]]:
    run = ex.run
    frames: list[dict[str, Any]] = []
    # A sync delegate parked inside a `task` call (capabilities/subagents): the person approves the delegate's
    # own call, and its state is kept so the approval resumes that delegate in place.
    delegations = {cid: meta["delegation"] for cid, meta in (requests.metadata or {}).items()
                   if isinstance(meta, dict) and "delegation" in meta}
    # Before the transaction: the capabilities' own keeping (media's storage IO) holds no row lock.
    stored_messages, kept = lifecycle.on_park(ex, ModelMessagesTypeAdapter.dump_python(messages, mode="json"))
    with transaction.atomic():
        for call in requests.approvals:
            args = call.args_as_dict()
            inner = (delegations.get(call.tool_call_id) or {}).get("approvals", [{}])[0]
            if ((requests.metadata or {}).get(call.tool_call_id) or {}).get(ASK_AGAIN):
                # Approved once, then lost in flight with its worker: the same approval waits for a decision again.
                Approval.objects.filter(run=run, tool_call_id=call.tool_call_id).update(
                    status=Approval.Status.PENDING, decided_by=None, decided_at=None, note="")
            approval, _ = Approval.objects.get_or_create(
                run=run,
                tool_call_id=call.tool_call_id,
                defaults={
                    "organization_id": run.organization_id,
                    "tool_id": inner.get("tool_id") or ex.tool_ids.get(call.tool_name, call.tool_name),
                    "tool_name": inner.get("tool_name") or call.tool_name,
                    "capability_id": inner.get("capability_id", ex.transcript.tool_capabilities.get(call.tool_name, "")),
                    "args": jsonable(inner.get("args", args)),
                },
            )
            ex.transcript.tool_parked(call.tool_call_id)
            frames.append(
                frame(
                    "tool_approval_required",
                    run_id=str(run.pk),
                    approval_id=str(approval.pk),
                    tool_call_id=call.tool_call_id,
                    tool_name=approval.tool_name,
                    args=approval.args,
                )
            )
        for call in requests.calls:
            args = call.args_as_dict()
            asked = (delegations.get(call.tool_call_id) or {}).get("questions")
            question = Question.objects.create(
                organization_id=run.organization_id,
                run=run,
                asked_user_id=run.user_id,  # type: ignore[misc]  # nullable FK typed as int
                tool_call_id=call.tool_call_id,
                questions=jsonable(asked or args.get("questions", args)),
            )
            ex.transcript.tool_parked(call.tool_call_id)
            frames.append(
                frame("ask_user", run_id=str(run.pk), question_id=str(question.pk), questions=question.questions)
            )
        if requests.approvals:
            asked = [f["data"]["approval_id"] for f in frames if f["type"] == "tool_approval_required"]
            run_id = run.pk
            transaction.on_commit(lambda: signals.send(signals.approval_requested, run_id=run_id, approval_ids=asked))
        status = RunStatus.AWAITING_APPROVAL if requests.approvals else RunStatus.AWAITING_ANSWER
        message, answer = ex.transcript.answer_writes()
        inserts, spend = ex.spend_writes()
        write_together(*answer, *inserts, Update(Run.objects.filter(pk=run.pk), {
            "status": status,
            "parked_state": {"messages": stored_messages, **kept,
                             **({"delegations": delegations} if delegations else {})},
            "heartbeat_at": timezone.now(),
            "checkpoint": None,  # the parked state is the run's state now
            **spend,
        }))
    if message is not None:
        frames.insert(0, frame("message_saved", message_id=message.pk, role="assistant"))
    return status, frames
