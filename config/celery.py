"""Celery app. Queues: `default`, `runs` (I/O-bound agent runs), `cpu` (ingestion, transcription)."""

from __future__ import annotations

import os
import threading

from celery import Celery
from celery.signals import beat_init, worker_init, worker_ready, worker_shutdown, worker_shutting_down

from agenticos.redis_compat import never_send_client_setinfo

never_send_client_setinfo()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Celery's Django fix-up runs every system check as a worker starts — importing the whole URLconf, the console's
# and the API's views — and drops what they find: start to "ready." 5.09 → 4.40 s without them (three pairs), paid
# again by every worker started in place of a lost one (its runs wait for it). `migrate` runs the checks where a deployment starts
# (`make run`'s launcher, docker-compose's migrate service), and reports them.
os.environ.setdefault("CELERY_SKIP_CHECKS", "true")

app = Celery("agenticos")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


_started_at = None  # this worker's start, before it takes any message (worker_init)


@worker_init.connect
def _start_tracing(**_kwargs) -> None:
    """Spans of tasks and runs, when an OTLP endpoint is configured (agenticos.telemetry; nothing otherwise)."""
    global _started_at
    from django.utils import timezone

    from agenticos import telemetry

    _started_at = timezone.now()
    telemetry.setup("worker")


@beat_init.connect
def _start_tracing_beat(**_kwargs) -> None:
    from agenticos import telemetry

    telemetry.setup("beat")


@worker_ready.connect
def _warm_up_the_runner(**_kwargs) -> None:
    """A worker's first run must not pay for importing every capability (see agents.runner.warm), nor for
    starting the runs loop."""
    from agenticos import gc_tuning
    from agents.runner.loop import runs_loop
    from agents.runner.warm import warm_up

    warm_up()
    runs_loop()
    # Once what the worker serves is imported: the collector no longer re-examines it (agenticos/gc_tuning.py).
    gc_tuning.tune()
    # In a thread of its own: the messages it sends must not go out from inside the consumer's start-up (they
    # stayed unsent there until the beat's redelivery, bench/durability.py measured), and it holds nothing else.
    threading.Thread(target=_hand_back_what_a_dead_predecessor_held, name="hand-back", daemon=True).start()


def _hand_back_what_a_dead_predecessor_held() -> None:
    """The runs of the worker this one replaces go on now, not after the heartbeat's bound (agents.runner.recovery):
    the launcher saw that worker die and names it; a worker under this very name before this start is dead too."""
    from agents.runner import finish
    from agents.runner.checkpoint import worker_name
    from agents.runner.loop import logger
    from agents.runner.recovery import PREDECESSOR_ENV

    if _started_at is None:
        return
    try:
        handed = finish.hand_back_runs_of([worker_name(), os.environ.get(PREDECESSOR_ENV, "")], before=_started_at)
    except Exception:  # the beat's sweep still finds them by their heartbeat
        logger.warning("could not hand back the runs of the worker this one replaces", exc_info=True)
        return
    if handed:
        logger.warning("handed back %d run(s) the worker this one replaces left running", handed)


@worker_shutting_down.connect
def _take_no_new_runs(**_kwargs) -> None:
    """SIGTERM (or Ctrl-C): runs waiting for room give their messages back. Runs in the signal handler: only
    a flag and a notify."""
    from agents.runner.loop import started_loop

    runs = started_loop()
    if runs is not None:
        runs.stop_admitting()


@worker_shutdown.connect
def _drain_the_runs(**_kwargs) -> None:
    """The worker stops: its runs get RUN_SHUTDOWN_GRACE_SECONDS to finish, the rest are handed back to the queue
    from their last checkpoint (the next worker goes on with them)."""
    from django.conf import settings

    from agents.runner.loop import logger, started_loop

    runs = started_loop()
    if runs is None:
        return
    grace = settings.RUN_SHUTDOWN_GRACE_SECONDS
    stopped = runs.drain(grace, f"The worker shut down; the run did not finish within its {grace} s grace.")
    if stopped:
        logger.warning("handed back %d run(s) still going after the %d s shutdown grace", stopped, grace)
