"""Knowledge tests: the app's URLs, its capabilities registered, uploads in a temporary MEDIA_ROOT, and
ingestion tasks run eagerly on commit (the real task code, without a worker process)."""

from __future__ import annotations

import pytest

from capabilities import registry
from tests.fakes.mem0_server import fake_mem0  # noqa: F401
from tests.fakes.openai_server import fake_openai  # noqa: F401

CAPABILITY_MODULES = (
    "capabilities.knowledge",
    "capabilities.conversation_search",
    "capabilities.context",
    "capabilities.memory_files",
    "capabilities.skills",
    "capabilities.memory_mem0",
)


@pytest.fixture(autouse=True)
def _knowledge_setup(settings, tmp_path):
    import importlib

    settings.ROOT_URLCONF = "tests.knowledge.urls"
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "knowledge:read"]
    from config.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    added = []
    for path in CAPABILITY_MODULES:
        try:
            module = importlib.import_module(path)
        except ImportError:
            continue
        if registry.find(module.CAPABILITY.id) is None:
            registry.register(module.CAPABILITY)
            added.append(module.CAPABILITY.id)
    yield
    app.conf.task_always_eager = eager
    for capability_id in added:
        registry.unregister(capability_id)
