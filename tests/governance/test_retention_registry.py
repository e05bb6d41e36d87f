"""The sweeps and file finders the apps above governance (surfaces, capabilities) register in their
AppConfig.ready() are in governance's registry (governance imports none of them: a missing registration would
silently keep data past its period)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from capabilities.compaction.persisted import sweep_past_period
from channelbots.retention import sweep_link_requests
from embeds.retention import page_files
from governance import retention


def test_the_surfaces_register_their_sweeps_and_file_finders():
    assert retention.SWEEPS["expired_link_requests"] is sweep_link_requests
    assert retention.SWEEPS["compacted_histories"] is sweep_past_period
    assert page_files in retention.MESSAGE_FILES


def test_a_name_taken_by_another_sweep_is_refused():
    with pytest.raises(ImproperlyConfigured):
        retention.register_sweep("audit_log", lambda now=None: 0)
    with pytest.raises(ImproperlyConfigured):
        retention.register_sweep("removed_files", lambda now=None: 0)
    retention.register_sweep("expired_link_requests", sweep_link_requests)  # the same one again: ready() twice


def test_sweep_all_runs_removed_files_last(monkeypatch):
    order: list[str] = []
    monkeypatch.setattr(retention, "SWEEPS", {name: (lambda now, n=name: order.append(n) or 0)
                                              for name in ("b", "a")})
    monkeypatch.setattr(retention, "sweep_removed_files", lambda now: order.append("removed_files") or 0)
    assert retention.sweep_all() == {"b": 0, "a": 0, "removed_files": 0}
    assert order == ["b", "a", "removed_files"]
