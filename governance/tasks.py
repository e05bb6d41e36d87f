"""Governance tasks (default queue): thin wrappers around governance services."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="governance.tasks.remove_pending_files", ignore_result=True)
def remove_pending_files() -> int:
    """Right after a conversation (or an expired message) is deleted: its stored files go. The hourly
    retention sweep does the same for anything this missed."""
    from governance import retention

    return retention.remove_pending_files()
