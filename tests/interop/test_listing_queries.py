"""What /v1/models and the MCP tool list read does not grow with the number of agents."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from interop.mcp_server import tools_for
from interop.service import runnable_agents
from tests.runner.conftest import actor_of, publish

pytestmark = pytest.mark.django_db


def queries(fn) -> int:
    with CaptureQueriesContext(connection) as captured:
        fn()
    return len(captured)


def test_listing_costs_the_same_for_one_agent_or_five(org, owner, member):
    publish(org, owner, name="First")
    actor = actor_of(member, org)
    tools_for(actor)  # warm the per-process caches (guardian's content type)
    one = (queries(lambda: runnable_agents(actor)), queries(lambda: tools_for(actor)))
    for n in range(4):
        publish(org, owner, name=f"More {n}")
    assert len(tools_for(actor)) == 5
    assert (queries(lambda: runnable_agents(actor)), queries(lambda: tools_for(actor))) == one
