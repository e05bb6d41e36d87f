"""Celery tasks of evaluation suites (ids only; the work is evals.driver)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="evals.tasks.run_suite")
def run_suite(suite_run_id: str) -> None:
    """Drive one suite run on the default queue: its cases' runs execute on the `runs` workers."""
    from evals import driver

    driver.run_suite(suite_run_id)


@shared_task(name="evals.tasks.sweep_stale_suite_runs")
def sweep_stale_suite_runs() -> int:
    from evals import driver

    return driver.sweep_stale()


@shared_task(name="evals.tasks.run_replay_set")
def run_replay_set(replay_set_id: str) -> None:
    """Drive one replay set on the default queue: its runs execute on the `runs` workers."""
    from evals import replay_driver

    replay_driver.run_replay_set(replay_set_id)
