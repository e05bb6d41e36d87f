"""What a lost worker leaves behind, and how its runs go on elsewhere.

A run's row gets a heartbeat from its worker's pulse (`loop.beat_rows`, every RUN_HEARTBEAT_SECONDS); a run
still `running` whose heartbeat is older than RUN_HEARTBEAT_STALE_AFTER lost its worker (SIGKILL, OOM, a lost
host). The beat's sweep (`finish.sweep_stale_runs`, every RUN_SWEEP_SECONDS) hands it back: one conditional
UPDATE puts it back in the queue with a `run_interrupted` event (so only one sweep ever does, even with two
racing), and a message goes to the broker after commit. Whichever `runs` worker takes it — the claim is itself a
conditional UPDATE from `queued`, so exactly one does — goes on from its checkpoint (agents/runner/checkpoint.py),
records `run_resumed` (which worker, from which step, how long the run waited since its last sign of life) and
tells watchers with a `resumed` frame. A shutdown past its grace hands its runs back the same way
(`RunExecution._hand_back`).

A run that keeps killing its workers (a tool that exhausts memory, say) is not handed back forever: after
RUN_MAX_RESUMES interruptions the sweep ends it `failed` ("worker lost"), as every lost run ended before.

A worker that only stalled past the stale limit (a frozen VM) and comes back must not go on beside the one that
took its run over: its pulse beats only rows whose `worker` is still this process, and a run whose row it no
longer holds is stopped here without writing anything (`loop.RunLoop._pulse`).

A death seen where it happens does not wait for the heartbeat's bound: `make run`'s launcher restarts a worker it
saw die and tells the new one the dead one's name (PREDECESSOR_ENV), and a worker starting under the name a
dead one had (a restarted container) knows that name is dead too; either hands those runs back as it starts
(`finish.hand_back_runs_of`, from config.celery's worker_ready). The heartbeat remains for deaths nobody saw (a
lost machine).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.utils import timezone

from agents.models import Run, ToolCall
from agents.runner import checkpoint

logger = logging.getLogger(__name__)

# The name (host:pid, checkpoint.worker_name) of the worker a restarted one replaces, set by the launcher.
PREDECESSOR_ENV = "AGENTICOS_PREDECESSOR_WORKER"


def requeue(run_id: Any) -> None:
    """Send the run to the broker once the transaction that put it back in the queue commits (at once outside
    one); a broker that cannot take it now fails nothing (agents.runs.deliver_after_commit). Sync."""
    from agents.runs import deliver_after_commit

    deliver_after_commit(run_id)


def waited_seconds(run: Run) -> float | None:
    """Since the lost worker's last sign of life (its last heartbeat, as the interruption recorded it)."""
    last = next((e for e in reversed(run.events or []) if e.get("type") == "run_interrupted"), None)
    if not last or not last.get("last_heartbeat"):
        return None
    try:
        since = datetime.fromisoformat(last["last_heartbeat"])
    except (TypeError, ValueError):
        return None
    return round(max(0.0, (timezone.now() - since).total_seconds()), 3)


def record_resumed(run: Run, step: int) -> None:
    """The `run_resumed` event, by the worker that took the run over. Sync (ORM).

    A run lost with no tool call in flight was waiting on the model: that request was cut mid-stream and is sent
    again. What the provider billed for the lost part never came back as usage (it comes with a response's end),
    so the run's cost is marked partial (`cost_is_partial`, as for an unpriced model) and the event says
    `request_cut`; the ledger keeps one row per answered response."""
    cut = not ToolCall.objects.filter(run=run, status=ToolCall.Status.RUNNING).exists()
    Run.objects.filter(pk=run.pk).update(events=checkpoint.appended("events", checkpoint.event(
        "run_resumed", worker=checkpoint.worker_name(), from_step=step, waited_seconds=waited_seconds(run),
        request_cut=cut)), **({"cost_is_partial": True} if cut else {}))


def interruptions(run: Run) -> int:
    return sum(1 for e in (run.events or []) if e.get("type") == "run_interrupted")
