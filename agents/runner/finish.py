"""Endings that happen outside a live execution: stop a queued/parked run, sweep stale and expired ones."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from agents.models import Run, RunStatus, ToolCall
from governance.models import Approval, Question

PARKED = (RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER)


def cancel_parked_or_queued(run_id) -> bool:
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status not in (RunStatus.QUEUED, *PARKED):
            return False
        _close(run, RunStatus.CANCELLED, {"type": "Cancelled", "message": "Stopped by request."})
    return True


def end_live(run_id, status: str, error: dict | None = None, *, output: str = "") -> bool:
    """End a run that no worker executes — a voice call's (calls.service), running for as long as the call lasts —
    as any run ends: its status, its tool calls still open unfinished, its pending approvals and questions
    expired. Its transcript and spend stay as written. False when it had already ended (the sweep, a stop)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.is_terminal:
            return False
        _close(run, status, error or {})
        if output:
            Run.objects.filter(pk=run.pk).update(output=output)
    return True


def _close(run: Run, status: str, error: dict) -> None:
    Run.objects.filter(pk=run.pk).update(status=status, error=error, finished_at=timezone.now(), parked_state=None,
                                         checkpoint=None)
    ToolCall.objects.filter(run=run, status__in=[ToolCall.Status.PARKED, ToolCall.Status.RUNNING]).update(
        status=ToolCall.Status.UNFINISHED, finished_at=timezone.now()
    )
    pending = list(Approval.objects.filter(run=run, status=Approval.Status.PENDING).values_list("pk", flat=True))
    Approval.objects.filter(pk__in=pending, status=Approval.Status.PENDING).update(
        status=Approval.Status.EXPIRED, decided_at=timezone.now()
    )
    for approval_id in pending:
        # Heard like a decision (a chat card then reads "Expired without a decision", its buttons gone).
        transaction.on_commit(partial(_closed, approval_id))
    Question.objects.filter(run=run, status=Question.Status.PENDING).update(status=Question.Status.EXPIRED)


def _closed(approval_id) -> None:
    from governance import signals

    signals.send(signals.approval_decided, approval_id=approval_id, via="")


def _close_each(runs, status: str, error: dict) -> int:
    count = 0
    for run in runs:
        with transaction.atomic():
            _close(run, status, error)
        count += 1
    return count


def sweep_stale_runs() -> int:
    """A dead worker never leaves a run "running" for long: its runs' heartbeats stop (every live run's row is
    beaten every RUN_HEARTBEAT_SECONDS), and past RUN_HEARTBEAT_STALE_AFTER each goes back to the queue to go on
    from its checkpoint on another worker — or, lost RUN_MAX_RESUMES times already, ends `failed` (see
    agents.runner.recovery). Returns how many it found."""
    cutoff = timezone.now() - settings.RUN_HEARTBEAT_STALE_AFTER
    return _hand_back(Q(heartbeat_at__lt=cutoff))


def hand_back_runs_of(workers: list[str], *, before) -> int:
    """The runs of workers known to be dead go back to the queue now, not after the heartbeat's bound: this
    process's predecessor under the same name (a container restarted keeps its host name and, often, its pid)
    and the process the launcher just replaced (config.supervision passes its name). Only rows beaten before
    `before` (this process's start): a run this process has claimed since is its own. Returns how many."""
    names = sorted({name for name in workers if name})
    if not names:
        return 0
    return _hand_back(Q(worker__in=names, heartbeat_at__lt=before))


def _hand_back(lost_worker: Q) -> int:
    from agenticos import metrics
    from agents.runner import checkpoint, recovery

    stale = list(Run.objects.filter(lost_worker, status=RunStatus.RUNNING)
                 .only("id", "surface", "events", "heartbeat_at", "worker", "options")[:500])
    # A voice call's run is beaten by the web process holding the call (calls.consumers): stale, that process is
    # gone and so is the call — a conversation spoken live cannot go on from a checkpoint on another worker.
    calls = [run for run in stale if run.is_voice_call]
    stale = [run for run in stale if not run.is_voice_call]
    _close_each(calls, RunStatus.FAILED,
                {"type": "CallLost", "message": "The server holding this voice call stopped answering; the call "
                                                "ended there."})
    lost = [run for run in stale if recovery.interruptions(run) >= settings.RUN_MAX_RESUMES]
    for run in stale:
        if run in lost:
            continue
        interrupted = checkpoint.event("run_interrupted", reason="worker_lost", worker=run.worker,
                                       last_heartbeat=run.heartbeat_at.isoformat() if run.heartbeat_at else None)
        # Only if it is still that lost worker's running run (a worker's late beat wins; of two sweeps racing, one
        # moves it), and enqueued after commit.
        with transaction.atomic():
            if Run.objects.filter(lost_worker, pk=run.pk, status=RunStatus.RUNNING).update(
                    status=RunStatus.QUEUED, heartbeat_at=timezone.now(), worker="",
                    events=checkpoint.appended("events", interrupted)):
                recovery.requeue(run.pk)
    _close_each(lost, RunStatus.FAILED,
                {"type": "WorkerLost", "message": "The worker running this run stopped answering "
                                                  f"({settings.RUN_MAX_RESUMES} times; it was not resumed again)."})
    for run in lost:  # their own worker, which would have counted the ending, is gone
        metrics.run_finished(run, RunStatus.FAILED)
    return len(stale) + len(calls)


def requeue_lost_runs() -> int:
    """PostgreSQL is the truth of what is queued, not the broker: a run `queued` whose message the broker lost
    (Redis flushed, restarted without its data, or unreachable when the run was queued or handed back) would wait
    forever. Every queued run whose last delivery is older than RUN_REDELIVER_AFTER (one that already ran: the
    heartbeat's bound, RUN_HEARTBEAT_STALE_AFTER, when shorter) is sent again. A queued
    run's last delivery is its `heartbeat_at` (stamped when it is handed back, resumed from a park, or sent again
    here), or its `created_at` when it was never started. Returns how many were sent again.

    Once per bound, not at every sweep: one conditional UPDATE stamps the new delivery (of two sweeps racing, one
    does) and the message goes after commit. A run still waiting in a backlog deeper than the bound may so get a
    second message; only one worker ever takes the run (the claim is a conditional UPDATE from `queued`), and the
    other message finds nothing to do."""
    from agents.runner import recovery

    now = timezone.now()
    due = now - settings.RUN_REDELIVER_AFTER
    # A run that already ran (handed back by a lost worker, or resumed from a park) is sent again sooner, after
    # the heartbeat's bound: a worker killed between taking its message (acked on acceptance) and claiming the
    # run leaves it queued with no message, and the promise is a resume within a minute of a death
    # (bench/durability.py measured 124–143 s p50 at the 120 s bound). Few runs are in that state; a duplicate
    # message is harmless (one claim wins).
    resumed_due = now - min(settings.RUN_REDELIVER_AFTER, settings.RUN_HEARTBEAT_STALE_AFTER)
    oldest = now - settings.RUN_STALE_AFTER  # a never-started run older than this fails below instead
    delivered = Coalesce("heartbeat_at", "created_at")
    candidates = list(Run.objects.filter(status=RunStatus.QUEUED)
                      .alias(delivered=delivered)
                      .filter(Q(started_at__isnull=False, delivered__lt=resumed_due)
                              | Q(started_at__isnull=True, created_at__gte=oldest, delivered__lt=due))
                      .values_list("pk", flat=True)[:1000])
    sent: list = []
    if candidates:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Run._meta.db_table} SET heartbeat_at = %s WHERE id = ANY(%s::uuid[]) AND status = %s"  # noqa: S608
                " AND COALESCE(heartbeat_at, created_at)"
                " < CASE WHEN started_at IS NULL THEN %s ELSE %s END RETURNING id",
                [now, candidates, RunStatus.QUEUED, due, resumed_due])
            sent = [row[0] for row in cursor.fetchall()]
            for run_id in sent:
                recovery.requeue(run_id)
    # Older than the stale limit: nobody is going to run it now.
    expired = Run.objects.filter(status=RunStatus.QUEUED, started_at__isnull=True, created_at__lt=oldest)
    _close_each(expired, RunStatus.FAILED, {"type": "NeverStarted", "message": "No worker picked this run up."})
    return len(sent)


def expire_approvals() -> int:
    cutoff = timezone.now() - timedelta(hours=settings.APPROVAL_EXPIRY_HOURS)
    runs = Run.objects.filter(
        status=RunStatus.AWAITING_APPROVAL, approvals__status=Approval.Status.PENDING, approvals__created_at__lt=cutoff
    ).distinct()
    return _close_each(runs, RunStatus.CANCELLED, {"type": "ApprovalExpired", "message": "Nobody decided in time."})


def expire_questions() -> int:
    cutoff = timezone.now() - timedelta(hours=settings.QUESTION_EXPIRY_HOURS)
    runs = Run.objects.filter(
        status=RunStatus.AWAITING_ANSWER, questions__status=Question.Status.PENDING, questions__created_at__lt=cutoff
    ).distinct()
    return _close_each(runs, RunStatus.CANCELLED,
                       {"type": "QuestionExpired", "message": "The question was not answered in time."})
