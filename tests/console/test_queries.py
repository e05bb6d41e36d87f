"""List pages do a fixed number of queries whatever their length (no N+1)."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agenticos.models import Membership
from governance.models import Approval
from tests import factories
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db
_names = itertools.count(1)


def queries(client, path) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured)


def grow(org, owner, agent, n):
    for i in range(n):
        factories.published_agent(org, owner, name=f"Agent {next(_names)}", budget={"monthly_usd": "5"})
        conversation, run = make_turn(org, owner, agent, tools=("create_chart", "run_python"),
                                      status="awaiting_approval")
        Approval.objects.create(organization=org, run=run, tool_call_id=f"c{i}", tool_id="t", tool_name="t", args={})
        factories.secret(org)
        factories.model_profile(org)
        Membership.objects.create(organization=org, user=factories.user(), role="member")


@pytest.mark.parametrize("path", ["/", "/agents/", "/chat/", "/chat/?q=Agent", "/activity/", "/approvals/", "/settings/secrets/",
                                  "/settings/models/", "/settings/members/", "/settings/api-keys/"])
def test_a_list_page_does_not_grow_its_queries_with_its_rows(client_as, org, owner, agent, path):
    client = client_as(owner, org)
    grow(org, owner, agent, 2)
    client.get(path)  # warm the process-wide caches (ContentType) so both counts measure the page alone
    few = queries(client, path)
    grow(org, owner, agent, 8)
    assert queries(client, path) == few


def test_a_long_conversation_reopens_in_a_fixed_number_of_queries(client_as, org, owner, agent):
    client = client_as(owner, org)
    conversation, _run = make_turn(org, owner, agent)
    few = queries(client, f"/chat/{conversation.pk}/")
    for _ in range(10):
        make_turn(org, owner, agent, conversation=conversation, tools=("create_chart", "run_python"))
    assert queries(client, f"/chat/{conversation.pk}/") == few
    assert queries(client, f"/chat/{conversation.pk}/turns.json") <= few
