"""Celery app. Queues: `default`, `runs` (I/O-bound agent runs), `cpu` (ingestion, transcription)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_ready

from agenticos.redis_compat import never_send_client_setinfo

never_send_client_setinfo()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings")

app = Celery("agenticos")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _warm_up_the_runner(**_kwargs) -> None:
    """A worker's first run must not pay for importing every capability (see agents.runner.warm)."""
    from agents.runner.warm import warm_up

    warm_up()
