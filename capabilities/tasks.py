"""Celery tasks: thin wrappers."""

from __future__ import annotations

from celery import shared_task

from capabilities.tool_output_limits.capability import sweep_finished_spills


@shared_task(name="capabilities.tasks.sweep_spilled_outputs", ignore_result=True)
def sweep_spilled_outputs() -> int:
    return sweep_finished_spills()
