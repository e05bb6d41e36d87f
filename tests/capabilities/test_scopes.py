"""Scopes: every scope the deployment grants by default gates something, and every declared one is granted."""

from __future__ import annotations

import importlib

from capabilities import registry
from config import settings as project_settings


def _declared() -> set[str]:
    return {s for module in registry.BUILTIN for s in importlib.import_module(module).CAPABILITY.scopes}


def test_every_scope_granted_by_default_is_declared_by_some_capability():
    granted = set(project_settings.DEFAULT_GRANTED_SCOPES)
    unused = granted - _declared()
    assert not unused, f"granted but gating nothing: {sorted(unused)}"


def test_every_scope_a_capability_declares_is_granted_by_default():
    assert _declared() <= set(project_settings.DEFAULT_GRANTED_SCOPES)


def test_the_catalog_reports_only_scopes_that_gate_a_capability(settings):
    settings.DEFAULT_GRANTED_SCOPES = project_settings.DEFAULT_GRANTED_SCOPES
    assert set(registry.catalog_json()["granted_scopes"]) <= _declared()
