"""Sandbox tests: a published agent with the sandbox capability and real Run rows."""

from __future__ import annotations

import pytest

from capabilities.models import Workspace
from tests import factories


@pytest.fixture
def sandbox_agent(org, owner):
    return factories.published_agent(org, owner, capabilities=[{"id": "sandbox"}])


@pytest.fixture
def workspace(sandbox_agent):
    return Workspace.objects.create(organization_id=sandbox_agent.organization_id, agent=sandbox_agent,
                                    scope="agent", key="", label="test")
