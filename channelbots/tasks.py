"""Celery tasks (queue "default"): thin wrappers taking plain data."""

from __future__ import annotations

from celery import shared_task

from channelbots import router
from channelbots.incoming import Incoming


@shared_task(name="channelbots.tasks.handle_incoming", ignore_result=True)
def handle_incoming(data: dict, claimed: bool) -> str:
    return router.process(Incoming.from_json(data), claimed)


@shared_task(name="channelbots.tasks.update_card", ignore_result=True)
def update_card(approval_id: str, via: str = "") -> str:
    from channelbots import approvals

    return approvals.update_card(approval_id, via)


@shared_task(name="channelbots.tasks.follow_resumed", ignore_result=True)
def follow_resumed(run_id: str) -> str:
    from channelbots import approvals

    return approvals.follow_resumed(run_id)
