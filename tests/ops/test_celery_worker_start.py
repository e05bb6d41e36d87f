"""A Celery worker's start: what it does before it takes its first message."""

from __future__ import annotations


def test_a_starting_worker_does_not_run_the_system_checks_whose_findings_celery_drops(monkeypatch):
    """Celery's Django fix-up ran every system check as a worker started (the whole URLconf imported: ~0.9 s of a
    ~3.4 s start) and kept nothing of what they found; `migrate` runs them where a deployment starts."""
    from celery.fixups.django import DjangoWorkerFixup

    from config.celery import app

    ran: list[bool] = []
    monkeypatch.setattr("django.core.checks.run_checks", lambda *args, **kwargs: ran.append(True) or [])
    DjangoWorkerFixup(app).validate_models()
    assert ran == []
    # The same fix-up, asked to (the variable set empty), does run them: the spy above sees the call.
    monkeypatch.setenv("CELERY_SKIP_CHECKS", "")
    DjangoWorkerFixup(app).validate_models()
    assert ran == [True]
