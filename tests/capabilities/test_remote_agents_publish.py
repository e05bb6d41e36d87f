"""Publishing an agent that names remote agents (`external_agents`): which registrations, under which names.

Through the REST API (the error envelope, every problem at once), with an outsider organization. Registrations
are written directly here: reading a card has its own tests (test_remote_agents_api.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from agents import services
from agents.models import AgentVersion
from capabilities.remote_agents.models import RemoteAgent
from tests.runner.conftest import actor_of, demo_profile

pytestmark = pytest.mark.django_db


def _registration(org, name: str = "Weather Desk") -> RemoteAgent:
    return RemoteAgent.objects.create(organization=org, name=name, card_url="https://desk.partner.test/card.json",
                                      endpoint_url="https://desk.partner.test/rpc", card={"name": name})


def _lead(org, user, external: list[dict[str, Any]], *, capabilities: list[dict[str, Any]] | None = None,
          **spec: Any):
    data = {"name": "Lead", "model_profile_id": str(demo_profile(org).pk), "external_agents": external,
            "capabilities": capabilities if capabilities is not None else [{"id": "subagents"}], **spec}
    return services.create_agent(actor=actor_of(user, org), name="Lead", spec=data)


def _publish(api_as, user, org, agent):
    return api_as(user, org).post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")


def _problems(response) -> dict[str, str]:
    return {p["field"]: p["message"] for p in response.json()["error"]["details"]["problems"]}


def _at(problems: dict[str, str], index: int, name: str, rest: str) -> str:
    """The problem of `external_agents` item `index`, whichever way the path names the item (by its name, as
    for sub-agents, or by its position)."""
    found = [problems[f] for f in (f"external_agents[{name}].{rest}", f"external_agents[{index}].{rest}")
             if f in problems]
    assert len(found) == 1, problems
    return found[0]


def test_a_lead_naming_a_registration_of_its_organization_publishes(org, builder, api_as):
    row = _registration(org)
    lead = _lead(org, builder, [{"name": "weather-desk", "remote_agent_id": str(row.pk)}])
    response = _publish(api_as, builder, org, lead)
    assert response.status_code == 201, response.json()
    version = AgentVersion.objects.get(agent=lead)
    assert version.spec["external_agents"] == [{"name": "weather-desk", "description": "",
                                                "remote_agent_id": str(row.pk), "mode": None}]


def test_a_registration_of_another_organization_reads_as_one_that_does_not_exist(org, builder, outsider_org,
                                                                               api_as):
    theirs = _registration(outsider_org)
    missing = "6b0d3a57-6c1e-4f51-9a43-0b6a1b9e0c11"
    lead = _lead(org, builder, [{"name": "theirs", "remote_agent_id": str(theirs.pk)},
                                {"name": "nobody", "remote_agent_id": missing}])
    response = _publish(api_as, builder, org, lead)
    assert response.status_code == 422
    problems = _problems(response)
    assert _at(problems, 0, "theirs", "remote_agent_id") == f"No remote agent {theirs.pk} in this organization."
    assert _at(problems, 1, "nobody", "remote_agent_id") == f"No remote agent {missing} in this organization."
    assert not AgentVersion.objects.filter(agent=lead).exists()


def test_remote_agents_without_delegation_enabled_are_refused(org, builder, api_as):
    row = _registration(org)
    lead = _lead(org, builder, [{"name": "weather-desk", "remote_agent_id": str(row.pk)}],
                 capabilities=[{"id": "subagents", "enabled": False}])
    response = _publish(api_as, builder, org, lead)
    assert response.status_code == 422
    assert "delegation (subagents) is not enabled" in _problems(response)["external_agents"]
    assert not AgentVersion.objects.filter(agent=lead).exists()


def test_a_remote_agent_needs_a_name_no_other_delegate_has(org, owner, builder, api_as):
    row, other = _registration(org), _registration(org, "Second Desk")
    researcher = services.create_agent(actor=actor_of(owner, org), name="Researcher", spec={
        "name": "Researcher", "model_profile_id": str(demo_profile(org).pk)})
    services.publish_agent(actor=actor_of(owner, org), agent=researcher)
    inline = {"name": "writer", "description": "Writes", "instructions": "Write.",
              "model_profile_id": str(demo_profile(org).pk)}
    lead = _lead(org, builder, [
        {"name": "researcher", "remote_agent_id": str(row.pk)},
        {"name": "writer", "remote_agent_id": str(row.pk)},
        {"name": "desk", "remote_agent_id": str(row.pk)},
        {"name": "desk", "remote_agent_id": str(other.pk)},
    ], capabilities=[{"id": "subagents", "config": {"inline": [inline]}}],
        subagents=[{"name": "researcher", "agent_id": str(researcher.pk)}])
    response = _publish(api_as, builder, org, lead)
    assert response.status_code == 422
    messages = [p["message"] for p in response.json()["error"]["details"]["problems"]
                if p["field"].startswith("external_agents")]
    assert sorted(m.split(" already")[0] for m in messages) == ["A sub-agent", "An inline specialist",
                                                                "Another remote agent"]
    assert not AgentVersion.objects.filter(agent=lead).exists()
    # With names of their own, the same delegates publish.
    fixed = _lead(org, builder, [{"name": "desk-one", "remote_agent_id": str(row.pk)},
                                 {"name": "desk-two", "remote_agent_id": str(other.pk)}],
                  capabilities=[{"id": "subagents", "config": {"inline": [inline]}}],
                  subagents=[{"name": "researcher", "agent_id": str(researcher.pk)}])
    assert _publish(api_as, builder, org, fixed).status_code == 201


def test_a_name_the_model_cannot_call_is_refused_when_the_draft_is_saved(org, builder):
    from agenticos.errors import Invalid
    from agents.models import Agent

    row = _registration(org)
    with pytest.raises(Invalid) as refused:
        _lead(org, builder, [{"name": "weather desk!", "remote_agent_id": str(row.pk)}])
    fields = [p["field"] for p in refused.value.details["problems"]]
    assert any(f.startswith("external_agents") and f.endswith(".name") for f in fields), fields
    assert not Agent.objects.filter(organization=org).exists()
