"""Celery tasks: thin wrappers taking ids."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="triggers.tasks.dispatch_due_triggers", ignore_result=True)
def dispatch_due_triggers() -> dict:
    """Beat, every minute: fire every schedule that is due (two beats at once still fire each once)."""
    from triggers.firing import dispatch_due

    return dispatch_due()


@shared_task(name="triggers.tasks.deliver_to_channel", ignore_result=True)
def deliver_to_channel(firing_id: int) -> str:
    from triggers import delivery

    return delivery.deliver_to_channel(firing_id)


@shared_task(name="triggers.tasks.retention_sweeps", ignore_result=True)
def retention_sweeps() -> dict:
    """Beat, hourly: the deployment's retention sweeps (governance.retention), each batched and logged."""
    from governance import retention

    return retention.sweep_all()
