"""Fixtures for tools from outside the code: the fake REST API, the capabilities registered, private hosts."""

from __future__ import annotations

import pytest

from capabilities import registry
from tests.fakes.rest_api import FakeRestAPI

MINE = ("capabilities.custom_tools", "capabilities.tool_output_limits", "capabilities.web_fetch",
        "capabilities.web_research", "capabilities.db_connections", "capabilities.mcp", "capabilities.tool_search",
        "capabilities.custom_tools.builder")


@pytest.fixture
def tool_capabilities():
    import importlib

    registered = []
    for path in MINE:
        try:
            cap = importlib.import_module(path).CAPABILITY
        except (ImportError, AttributeError):
            continue
        if registry.find(cap.id) is None:
            registry.register(cap)
            registered.append(cap.id)
    yield
    for cap_id in registered:
        registry.unregister(cap_id)


@pytest.fixture
def rest_api():
    server = FakeRestAPI().start()
    yield server
    server.stop()


@pytest.fixture
def local_allowed(settings):
    """The tests' outside world lives on 127.0.0.1, so the operator lists it (SSRF tests prove the default)."""
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    return settings
