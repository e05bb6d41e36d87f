"""Celery app. Queues: `default`, `runs` (I/O-bound agent runs), `cpu` (ingestion, transcription)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings")

app = Celery("agenticos")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
