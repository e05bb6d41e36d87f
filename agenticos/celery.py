"""Celery app. Queues: `default`, `runs` (I/O-bound agent runs), `cpu` (ingestion, transcription)."""

from __future__ import annotations

import os

from celery import Celery

from agenticos.redis_compat import never_send_client_setinfo

never_send_client_setinfo()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings")

app = Celery("agenticos")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
