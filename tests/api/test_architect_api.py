"""POST /api/v1/runs/{run}/proposals/{call}/accept: the person whose run drew an Architect's agent card creates a
draft from it (with their edits); a member or viewer is refused by role (403), another builder of the organization
and an outsider do not find it (404); every refusal leaves every row as it was."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from agents.models import Agent, AgentVersion
from tests.api.state import TABLES, changed_tables, database_state
from tests.capabilities.test_architect import docs, drawn_proposal, model  # noqa: F401 (fixtures)
from triggers.models import Trigger

pytestmark = pytest.mark.django_db(transaction=True)
STATE = (*TABLES, "agents.ToolCall")


def url(call) -> str:
    return reverse("run-proposal-accept", kwargs={"run_id": call.run_id, "call_id": call.tool_call_id})


def test_the_runs_person_creates_a_draft_they_open_in_the_builder(org, builder, model, docs, fake_openai,  # noqa: F811
                                                                  api_as):
    call = drawn_proposal(org, builder, model, docs, fake_openai)
    response = api_as(builder, org).post(url(call), {"card": 0, "name": "Refund helper",
                                                     "monthly_budget_usd": "12.5"}, format="json")
    assert response.status_code == 201, response.content
    agent = Agent.objects.get(pk=response.json()["agent_id"])
    assert response.json() == {"agent_id": str(agent.pk), "name": "Refund helper",
                               "builder_url": f"/agents/{agent.pk}/", "trigger_id": None, "trigger_refused": ""}
    assert agent.owner == builder and Decimal(agent.draft_spec["budget"]["monthly_usd"]) == Decimal("12.5")
    assert not AgentVersion.objects.filter(agent=agent).exists()
    again = api_as(builder, org).post(url(call), {"card": 0}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "accepted"


@pytest.mark.parametrize(("who", "expected"), [("member", 403), ("viewer", 403), ("owner", 404), ("outsider", 404)])
def test_nobody_else_accepts_it_and_a_refusal_changes_nothing(org, builder, owner, member, viewer, outsider,  # noqa: F811
                                                              outsider_org, model, docs, fake_openai, api_as,
                                                              who, expected):
    call = drawn_proposal(org, builder, model, docs, fake_openai)
    person, in_org = {"member": (member, org), "viewer": (viewer, org), "owner": (owner, org),
                      "outsider": (outsider, outsider_org)}[who]
    client = api_as(person, in_org)
    before = database_state(STATE)
    response = client.post(url(call), {"card": 0}, format="json")
    assert response.status_code == expected
    assert set(response.json()["error"]) >= {"code", "message"}
    assert changed_tables(before, database_state(STATE)) == []


def test_an_unknown_call_or_card_and_an_edit_outside_the_card_are_refused(org, builder, model, docs,  # noqa: F811
                                                                         fake_openai, api_as):
    call = drawn_proposal(org, builder, model, docs, fake_openai)
    client = api_as(builder, org)
    before = database_state(STATE)
    missing = reverse("run-proposal-accept", kwargs={"run_id": call.run_id, "call_id": "call_nope"})
    assert client.post(missing, {"card": 0}, format="json").status_code == 404
    assert client.post(url(call), {"card": 2}, format="json").status_code == 404
    assert client.post(url(call), {"card": 0, "name": ""}, format="json").status_code == 400
    assert client.post(url(call), {"card": 0, "monthly_budget_usd": "-1"}, format="json").status_code == 400
    assert changed_tables(before, database_state(STATE)) == []


def test_a_setup_with_a_schedule_creates_its_trigger_on_the_draft_and_says_which(org, builder, member, model,  # noqa: F811
                                                                                docs, fake_openai, api_as):
    schedule = {"name": "Hourly check", "prompt": "Check the refund queue.", "every_seconds": 3600}
    call = drawn_proposal(org, builder, model, docs, fake_openai, trigger=schedule)
    before = database_state(STATE)
    assert api_as(member, org).post(url(call), {"card": 0}, format="json").status_code == 403
    assert changed_tables(before, database_state(STATE)) == []
    response = api_as(builder, org).post(url(call), {"card": 0}, format="json")
    assert response.status_code == 201, response.content
    trigger = Trigger.objects.get()
    assert response.json()["trigger_id"] == str(trigger.pk) and response.json()["trigger_refused"] == ""
    assert str(trigger.agent_id) == response.json()["agent_id"] and trigger.every_seconds == 3600
    assert trigger.creator == builder and not AgentVersion.objects.filter(agent=trigger.agent).exists()
