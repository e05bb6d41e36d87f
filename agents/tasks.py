"""Celery tasks: thin wrappers taking ids."""

from __future__ import annotations

from celery import shared_task

from agents import runner
from agents.runner import finish


@shared_task(name="agents.tasks.execute_run", acks_late=True, ignore_result=True)
def execute_run(run_id: str) -> None:
    runner.execute(run_id)


@shared_task(name="agents.tasks.sweep_stale_runs", ignore_result=True)
def sweep_stale_runs() -> int:
    return finish.sweep_stale_runs() + finish.requeue_lost_runs()


@shared_task(name="agents.tasks.expire_parked", ignore_result=True)
def expire_parked() -> dict:
    return {"approvals": finish.expire_approvals(), "questions": finish.expire_questions()}
