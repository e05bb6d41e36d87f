"""Approvals and parked questions: deciding, answering, resuming."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Conflict, Forbidden, Invalid
from agenticos.tenancy import Actor
from agents.models import Run, RunStatus
from governance import signals
from governance.models import Approval, Question

MAX_QUESTIONS = 10


def decide_approval(*, actor: Actor, approval: Approval, decision: str, note: str = "", via: str = "") -> Approval:
    """`via` says where the decision was made ("" = the console or the REST API; a chat platform's name)."""
    actor.require("approvals:decide")
    if decision not in ("approve", "reject"):
        raise Invalid("decision must be approve or reject.", details={"field": "decision"})
    with transaction.atomic():
        locked = Approval.objects.select_for_update().get(pk=approval.pk)
        if locked.status != Approval.Status.PENDING:
            raise Conflict(f"This call was already {locked.status}.", details={"status": locked.status})
        locked.status = Approval.Status.APPROVED if decision == "approve" else Approval.Status.REJECTED
        locked.decided_by = actor.user
        locked.note = note[:1000]
        locked.decided_at = timezone.now()
        locked.save(update_fields=["status", "decided_by", "note", "decided_at"])
        audit.record(
            actor=actor.user,
            organization=actor.organization,
            action=f"approval.{locked.status}",
            target=locked,
            target_name=f"{locked.tool_name} on run {locked.run_id}",
            details={"run_id": str(locked.run_id), "tool_id": locked.tool_id, "note": locked.note,
                     **({"via": via} if via else {})},
        )
        decided_id = locked.pk
        transaction.on_commit(lambda: signals.send(signals.approval_decided, approval_id=decided_id, via=via))
        # A decision resumes the run wherever it is made (console, REST API, a chat card): the last one of a
        # parked run continues it. The run's row lock orders concurrent deciders, so exactly one of them sees
        # nothing left pending.
        run = Run.objects.select_for_update().get(pk=locked.run_id)
        if run.status == RunStatus.AWAITING_APPROVAL and not _still_waiting(run):
            _resume_locked(actor, run)
    return locked


def deciders(organization_id: Any) -> list[Any]:
    """The people who may decide the organization's parked calls (`approvals:decide` by their role, a custom
    role's too): active, not suspended. One query, plus one per custom role held."""
    from agenticos.models import Membership
    from agenticos.permissions import permissions_of

    rows = Membership.objects.filter(organization_id=organization_id, is_suspended=False,
                                     user__is_active=True).values_list("user_id", "role")
    deciding: dict[str, bool] = {}
    found = []
    for user_id, role in rows:
        if role not in deciding:
            deciding[role] = "approvals:decide" in permissions_of(role, organization_id)
        if deciding[role]:
            found.append(user_id)
    return found


def pending_count(actor: Actor) -> int:
    """What the Approvals page lists first: the organization's calls waiting for a decision (0 for who may not
    decide them)."""
    if not actor.has("approvals:decide"):
        return 0
    return Approval.objects.filter(organization=actor.organization, status=Approval.Status.PENDING).count()


def _still_waiting(run: Run) -> str:
    if run.approvals.filter(status=Approval.Status.PENDING).exists():
        return "Some parked calls still wait for a decision."
    if run.questions.filter(status=Question.Status.PENDING).exists():
        return "Some questions still wait for an answer."
    return ""


def resume_run(*, actor: Actor, run: Run) -> Run:
    """Continue a parked run on the same version once every parked call has an outcome.

    A run the last decision already continued (queued or running again) is left as it is: a client that
    decides and then resumes, as this API once required, is not told it failed."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.status in (RunStatus.QUEUED, RunStatus.RUNNING):
            return locked
        if locked.status not in (RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER):
            raise Conflict(f"This run is {locked.status}; only a parked run can be resumed.")
        waiting = _still_waiting(locked)
        if waiting:
            raise Conflict(waiting)
        _resume_locked(actor, locked)
    return locked


def _resume_locked(actor: Actor, locked: Run) -> None:
    """Queue a parked run whose row the caller holds locked, inside the caller's transaction."""
    locked.status = RunStatus.QUEUED
    locked.heartbeat_at = timezone.now()  # a queued run's last delivery (agents.runner.finish.requeue_lost_runs)
    locked.save(update_fields=["status", "heartbeat_at"])
    audit.record(actor=actor.user, organization=actor.organization, action="run.resumed", target=locked,
                 target_name=f"run {locked.pk}")
    from agents.run_handle import deliver_after_commit

    # Heard before the run is enqueued, so a listener following the run subscribes as early as it can.
    transaction.on_commit(lambda: signals.send(signals.run_resumed, run_id=locked.pk))
    deliver_after_commit(locked.pk)


def normalize_answers(questions: list, answers: list) -> dict[str, list[str]]:
    """One answer per question, in order: an option label, a list of labels (multi_select), or
    {"custom": "written answer"}. Returns the tool result shape: {header: [labels or the written text]}."""
    if len(answers) != len(questions):
        raise Invalid(f"Expected {len(questions)} answers, got {len(answers)}.", details={"field": "answers"})
    result: dict[str, list[str]] = {}
    for index, (question, answer) in enumerate(zip(questions, answers, strict=True)):
        field = f"answers.{index}"
        header = str(question.get("header") or question.get("question") or index)
        if isinstance(answer, dict) and isinstance(answer.get("custom"), str) and answer["custom"].strip():
            result[header] = [answer["custom"].strip()[:2000]]
            continue
        labels = [answer] if isinstance(answer, str) else answer
        if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
            raise Invalid("Each answer is an option label, a list of labels or {\"custom\": text}.",
                          details={"field": field})
        offered = {o.get("label") for o in question.get("options", []) if isinstance(o, dict)}
        unknown = [label for label in labels if label not in offered]
        if unknown:
            raise Invalid(f"Not an option: {', '.join(unknown)}.", details={"field": field})
        if len(labels) > 1 and not question.get("multi_select"):
            raise Invalid("This question takes one choice.", details={"field": field})
        result[header] = labels
    return result


def answer_questions(*, actor: Actor, run: Run, answers: list) -> Run:
    """Only the person asked may answer; answering resumes the run."""
    with transaction.atomic():
        pending = list(Question.objects.select_for_update().filter(run=run, status=Question.Status.PENDING))
        if not pending:
            raise Conflict("There is no open question on this run.")
        if any(q.asked_user_id != actor.user_id for q in pending):
            raise Forbidden("Only the person who was asked can answer.")
        if not isinstance(answers, list) or not answers:
            raise Invalid("answers must be a non-empty list.", details={"field": "answers"})
        question = pending[0]
        question.answers = normalize_answers(question.questions, answers)
        question.status = Question.Status.ANSWERED
        question.answered_at = timezone.now()
        question.save(update_fields=["answers", "status", "answered_at"])
    return resume_run(actor=actor, run=run)
