"""Celery tasks for knowledge (routed to the "cpu" queue by settings.CELERY_TASK_ROUTES): thin wrappers."""

from __future__ import annotations

from celery import shared_task

from knowledge import services


@shared_task(name="knowledge.tasks.ingest_document", acks_late=True, ignore_result=True)
def ingest_document(document_id: str) -> str | None:
    document = services.ingest(document_id)
    return document.status if document is not None else None
