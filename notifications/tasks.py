"""Celery tasks of notifications: thin wrappers around notifications.services."""

from __future__ import annotations

from celery import shared_task

from notifications import services


@shared_task(name="notifications.tasks.email_notifications", acks_late=True, ignore_result=True)
def email_notifications(notification_ids: list[str]) -> int:
    return services.send_emails(notification_ids)
