"""A worker loads every capability when it starts, not on the first run it takes (that cost the first person
to write after a deploy about three seconds)."""

from __future__ import annotations

from celery.signals import worker_ready

from capabilities import registry


def test_a_starting_worker_loads_the_capability_registry(monkeypatch):
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "_registry", {})
    worker_ready.send(sender=None)
    assert registry._loaded
    assert {"clock", "sandbox", "knowledge", "code_execution"} <= {cap.id for cap in registry.all_capabilities()}
