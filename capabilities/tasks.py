"""Celery tasks: thin wrappers."""

from __future__ import annotations

from celery import shared_task

from capabilities.tool_output_limits.capability import sweep_finished_spills


@shared_task(name="capabilities.tasks.sweep_spilled_outputs", ignore_result=True)
def sweep_spilled_outputs() -> int:
    return sweep_finished_spills()


@shared_task(name="capabilities.tasks.sweep_turn_workspaces", ignore_result=True)
def sweep_turn_workspaces() -> int:
    from workspaces.store import sweep_turn_workspaces as sweep

    return sweep()


@shared_task(name="capabilities.tasks.write_follow_ups", ignore_result=True)
def write_follow_ups(follow_up_id: int) -> str:
    from capabilities.follow_ups.service import write

    return write(follow_up_id)
