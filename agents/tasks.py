"""Celery tasks: thin wrappers taking ids."""

from __future__ import annotations

from celery import shared_task
from celery.exceptions import Reject

from agents import runner
from agents.runner import finish
from agents.runner.loop import Draining


@shared_task(name="agents.tasks.execute_run", acks_late=True, ignore_result=True)
def execute_run(run_id: str) -> None:
    """Hand the run to this worker's runs loop and return once it is admitted (the message is acked then: a run
    admitted and lost with its worker is found by its heartbeat, agents.runner.recovery). While the worker holds
    RUN_MAX_CONCURRENT runs this waits, so the worker stops taking messages and the rest wait in the broker."""
    try:
        runner.start(run_id)
    except Draining:
        # The worker is shutting down: the message goes back to the broker for another worker.
        raise Reject("the worker is shutting down", requeue=True) from None


@shared_task(name="agents.tasks.sweep_stale_runs", ignore_result=True)
def sweep_stale_runs() -> int:
    return finish.sweep_stale_runs() + finish.requeue_lost_runs()


@shared_task(name="agents.tasks.watch_rollouts", ignore_result=True)
def watch_rollouts() -> int:
    from agents import rollouts

    return rollouts.watch_open_rollouts()


@shared_task(name="agents.tasks.expire_parked", ignore_result=True)
def expire_parked() -> dict:
    return {"approvals": finish.expire_approvals(), "questions": finish.expire_questions()}


@shared_task(name="agents.tasks.write_title", ignore_result=True)
def write_title(conversation_id: str, run_id: str | None = None) -> str:
    from agents import titles

    return titles.write_title(conversation_id, run_id)
