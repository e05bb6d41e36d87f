"""Publishing an agent that delegates: who may be named, by whom, and what the config may lend.

Through the REST API (the error envelope, every problem at once), with an outsider organization and weaker roles.
"""

from __future__ import annotations

from typing import Any

import pytest

from agents import services
from agents.models import AgentVersion
from tests.runner.conftest import actor_of, demo_profile

pytestmark = pytest.mark.django_db


def _published(org, user, name: str, visibility: str = "organization"):
    actor = actor_of(user, org)
    agent = services.create_agent(actor=actor, name=name, visibility=visibility, spec={
        "name": name, "model_profile_id": str(demo_profile(org).pk)})
    services.publish_agent(actor=actor, agent=agent)
    return agent


def _lead(org, user, subagents: list[dict[str, Any]], binding: dict[str, Any] | None = None, **spec):
    data = {"name": "Lead", "model_profile_id": str(demo_profile(org).pk), "subagents": subagents,
            "capabilities": [binding if binding is not None else {"id": "subagents"}], **spec}
    return services.create_agent(actor=actor_of(user, org), name="Lead", spec=data)


def _publish(api_as, user, org, agent):
    return api_as(user, org).post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")


def _problems(response) -> dict[str, str]:
    return {p["field"]: p["message"] for p in response.json()["error"]["details"]["problems"]}


def test_a_builder_publishes_a_lead_naming_an_agent_they_can_run(org, owner, builder, api_as):
    researcher = _published(org, owner, "Researcher")
    lead = _lead(org, builder, [{"name": "researcher", "agent_id": str(researcher.pk)}])
    response = _publish(api_as, builder, org, lead)
    assert response.status_code == 201, response.json()
    assert AgentVersion.objects.filter(agent=lead).count() == 1


def test_a_delegate_from_another_organization_cannot_be_named(org, builder, outsider, outsider_org, api_as):
    theirs = _published(outsider_org, outsider, "Their analyst")
    lead = _lead(org, builder, [{"name": "analyst", "agent_id": str(theirs.pk)}])
    response = _publish(api_as, builder, org, lead)
    assert response.status_code == 422
    problems = _problems(response)
    # The same words as an agent that does not exist: nothing about the other organization leaks.
    assert problems["subagents[analyst].agent_id"] == f"No published agent {theirs.pk} in this organization."
    assert not AgentVersion.objects.filter(agent=lead).exists()


def test_a_publisher_who_cannot_run_the_delegate_cannot_name_it(org, owner, builder, api_as):
    private = _published(org, owner, "Private analyst", visibility="private")
    lead = _lead(org, builder, [{"name": "analyst", "agent_id": str(private.pk)}])
    response = _publish(api_as, builder, org, lead)
    assert response.status_code == 422
    assert _problems(response)["subagents[analyst].agent_id"] == (
        "You cannot run this agent, so you cannot make it a delegate.")
    assert not AgentVersion.objects.filter(agent=lead).exists()
    # The same draft published by someone who can run it goes through.
    assert _publish(api_as, owner, org, lead).status_code == 201


def test_a_member_and_a_viewer_cannot_publish_a_lead_at_all(org, owner, member, viewer, api_as):
    researcher = _published(org, owner, "Researcher")
    lead = _lead(org, owner, [{"name": "researcher", "agent_id": str(researcher.pk)}])
    assert _publish(api_as, member, org, lead).status_code == 403
    assert _publish(api_as, viewer, org, lead).status_code == 403
    assert not AgentVersion.objects.filter(agent=lead).exists()


def test_naming_delegates_with_delegation_disabled_is_refused(org, owner, api_as):
    researcher = _published(org, owner, "Researcher")
    lead = _lead(org, owner, [{"name": "researcher", "agent_id": str(researcher.pk)}],
                 binding={"id": "subagents", "enabled": False})
    response = _publish(api_as, owner, org, lead)
    assert response.status_code == 422
    assert "not enabled" in _problems(response)["subagents"]


def test_share_with_delegates_lends_only_what_the_agent_is_bound_to_and_never_delegation(org, owner, api_as):
    researcher = _published(org, owner, "Researcher")
    lead = _lead(org, owner, [{"name": "researcher", "agent_id": str(researcher.pk)}],
                 binding={"id": "subagents", "config": {"share_with_delegates": ["charts", "subagents"]}})
    response = _publish(api_as, owner, org, lead)
    assert response.status_code == 422
    problems = _problems(response)
    assert any(f.endswith("share_with_delegates[0]") and "not bound to 'charts'" in m for f, m in problems.items())
    assert any("cannot be shared" in m for m in problems.values())


def test_the_config_caps_are_the_specs(org, owner, api_as):
    researcher = _published(org, owner, "Researcher")
    lead = _lead(org, owner, [{"name": "researcher", "agent_id": str(researcher.pk)}],
                 binding={"id": "subagents", "config": {"max_depth": 4, "max_fanout": 11, "max_result_chars": 100,
                                                        "mode": "later"}})
    response = _publish(api_as, owner, org, lead)
    assert response.status_code == 422
    fields = set(_problems(response))
    for name in ("max_depth", "max_fanout", "max_result_chars", "mode"):
        assert any(f.endswith(f"config.{name}") for f in fields), (name, fields)


def test_an_inline_specialist_must_name_a_model(org, owner, api_as):
    lead = _lead(org, owner, [], binding={"id": "subagents", "config": {"inline": [
        {"name": "writer", "description": "Writes", "instructions": "Write."}]}})
    response = _publish(api_as, owner, org, lead)
    assert response.status_code == 422
    assert any("model_profile_id" in f for f in _problems(response))


def test_a_second_organizations_member_cannot_publish_our_lead(org, owner, outsider, outsider_org, api_as):
    researcher = _published(org, owner, "Researcher")
    lead = _lead(org, owner, [{"name": "researcher", "agent_id": str(researcher.pk)}])
    assert api_as(outsider, outsider_org).post(f"/api/v1/agents/{lead.pk}/publish", {},
                                               format="json").status_code == 404
