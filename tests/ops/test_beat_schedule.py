"""Every periodic task beat fires names a task a worker has registered (a typo would fire nothing, silently)."""

from __future__ import annotations

from django.conf import settings

from config.celery import app


def test_every_beat_entry_names_a_registered_task():
    app.loader.import_default_modules()
    missing = {name: entry["task"] for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
               if entry["task"] not in app.tasks}
    assert missing == {}
    assert "sweep-spilled-outputs" in settings.CELERY_BEAT_SCHEDULE
