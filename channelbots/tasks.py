"""Celery tasks (queue "default"): thin wrappers taking plain data."""

from __future__ import annotations

from celery import shared_task

from channelbots import router
from channelbots.incoming import Incoming


@shared_task(name="channelbots.tasks.handle_incoming", ignore_result=True)
def handle_incoming(data: dict, claimed: bool) -> str:
    return router.process(Incoming.from_json(data), claimed)
