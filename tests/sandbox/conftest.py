"""Sandbox tests: a published agent with the sandbox capability and real Run rows."""

from __future__ import annotations

import pytest

from tests import factories
from workspaces.models import Workspace


@pytest.fixture
def sandbox_agent(org, owner):
    return factories.published_agent(org, owner, capabilities=[{"id": "sandbox"}])


@pytest.fixture
def workspace(sandbox_agent):
    return Workspace.objects.create(organization_id=sandbox_agent.organization_id, agent=sandbox_agent,
                                    scope="agent", key="", label="test")


@pytest.fixture(scope="session")
def sandboxd_server():
    """One real sandboxd for the session (bubblewrap; skipped with the reason where it is not installed)."""
    import shutil

    from tests.sandbox import sandboxd_server as server

    if shutil.which("bwrap") is None:
        pytest.skip(server.NO_BWRAP)
    running = server.start()
    yield running
    server.stop(running)


@pytest.fixture
def own_sandboxd(sandboxd_server, settings):
    """This deployment's own sandboxd is the test server: SANDBOXD_URL and its token file point at it."""
    settings.SANDBOXD_URL = sandboxd_server.url
    settings.SANDBOXD_TOKEN = ""
    settings.SANDBOXD_TOKEN_FILE = str(sandboxd_server.token_file)
    return sandboxd_server
