"""Publish, versions, environments: promote, rollback, dev follows every publish, versions are immutable."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from agenticos.models import AuditEvent
from agents import services
from agents.models import AgentVersion, Environment
from tests.api.conftest import actor_of, make_agent


def _envs(agent) -> dict[str, int]:
    return {e.name: e.version.number for e in Environment.objects.filter(agent=agent).select_related("version")}


def _set_instructions(client, agent, text):
    spec = {**agent.draft_spec, "instructions": text}
    assert client.patch(f"/api/v1/agents/{agent.pk}", {"spec": spec}, format="json").status_code == 200
    agent.refresh_from_db()


def test_the_first_publish_creates_v1_with_production_and_dev_on_it(org, builder, demo_profile, api_as):
    agent = make_agent(builder, org, profile=demo_profile)
    response = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/publish", {"note": "first"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["number"] == 1 and body["note"] == "first" and body["spec"]["instructions"] == "Be helpful."
    assert _envs(agent) == {"production": 1, "dev": 1}
    assert Environment.objects.get(agent=agent, name="dev").tracks_latest is True
    event = AuditEvent.objects.get(action="agent.published")
    assert event.details["version"] == 1 and event.actor == builder


def test_later_publishes_move_dev_but_production_waits_for_promotion(org, owner, published_agent, api_as):
    client = api_as(owner, org)
    _set_instructions(client, published_agent, "Second.")
    assert client.post(f"/api/v1/agents/{published_agent.pk}/publish", {}, format="json").json()["number"] == 2
    assert _envs(published_agent) == {"production": 1, "dev": 2}
    promoted = client.post(f"/api/v1/agents/{published_agent.pk}/environments/production/promote", {"version": 2},
                           format="json")
    assert promoted.status_code == 200 and promoted.json()["version"] == 2
    assert services.environment_version(published_agent, "production").spec["instructions"] == "Second."


def test_rollback_promotes_an_older_version_and_history_stays(org, owner, published_agent, api_as):
    client = api_as(owner, org)
    _set_instructions(client, published_agent, "Second.")
    client.post(f"/api/v1/agents/{published_agent.pk}/publish", {}, format="json")
    client.post(f"/api/v1/agents/{published_agent.pk}/environments/production/promote", {"version": 2}, format="json")
    back = client.post(f"/api/v1/agents/{published_agent.pk}/environments/production/promote", {"version": 1},
                       format="json")
    assert back.status_code == 200 and back.json()["version"] == 1
    versions = client.get(f"/api/v1/agents/{published_agent.pk}/versions").json()["results"]
    assert [v["number"] for v in versions] == [2, 1]
    event = AuditEvent.objects.get(action="agent.rolled_back")
    assert event.details == {"environment": "production", "from_version": 2, "to_version": 1}
    # dev still follows the next publish after a rollback of production.
    _set_instructions(client, published_agent, "Third.")
    client.post(f"/api/v1/agents/{published_agent.pk}/publish", {}, format="json")
    assert _envs(published_agent) == {"production": 1, "dev": 3}


def test_promoting_to_a_missing_version_is_404_and_a_new_environment_can_be_created(
    org, owner, published_agent, api_as
):
    client = api_as(owner, org)
    url = f"/api/v1/agents/{published_agent.pk}/environments/staging/promote"
    assert client.post(url, {"version": 9}, format="json").status_code == 404
    assert client.post(url, {"version": 1}, format="json").status_code == 200
    envs = client.get(f"/api/v1/agents/{published_agent.pk}/environments").json()
    assert [(e["name"], e["version"], e["tracks_latest"]) for e in envs] == [
        ("dev", 1, True), ("production", 1, False), ("staging", 1, False)
    ]


def test_version_for_resolves_an_environment_or_a_number_with_an_access_check(
    org, owner, viewer, member, published_agent
):
    v1 = services.version_for(actor=actor_of(member, org), agent=published_agent)
    assert v1.number == 1
    assert services.version_for(actor=actor_of(member, org), agent=published_agent, version=1) == v1
    from agenticos.errors import Forbidden

    with pytest.raises(Forbidden):
        services.version_for(actor=actor_of(viewer, org), agent=published_agent)


def test_publish_reports_every_problem_at_once_with_paths(org, builder, outsider, outsider_org, api_as):
    from agenticos import services as kernel

    foreign_secret = kernel.create_secret(actor=actor_of(outsider, outsider_org), name="theirs", value="x-123456789012")
    agent = make_agent(
        builder, org,
        model_profile_id="00000000-0000-0000-0000-000000000000",
        capabilities=[
            {"id": "clock", "secret_id": str(foreign_secret.pk)},
            {"id": "clock"},
        ],
        collection_ids=["11111111-1111-1111-1111-111111111111"],
        subagents=[{"name": "helper", "agent_id": "22222222-2222-2222-2222-222222222222"}],
    )
    response = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")
    assert response.status_code == 422
    problems = response.json()["error"]["details"]["problems"]
    fields = {p["field"] for p in problems}
    assert {
        "model_profile_id",
        "capabilities[clock].secret_id",
        "collection_ids[0]",
        "subagents[helper].agent_id",
    } <= fields, problems
    assert not AgentVersion.objects.filter(agent=agent).exists()


def test_publish_without_a_model_profile_names_the_field(org, builder, api_as):
    agent = make_agent(builder, org)
    response = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")
    assert response.status_code == 422
    assert {p["field"] for p in response.json()["error"]["details"]["problems"]} == {"model_profile_id"}


def test_a_member_cannot_publish(org, member, published_agent, api_as):
    response = api_as(member, org).post(f"/api/v1/agents/{published_agent.pk}/publish", {}, format="json")
    assert response.status_code == 403


def test_versions_are_immutable_through_the_orm(published_agent):
    version = AgentVersion.objects.get(agent=published_agent)
    version.note = "changed"
    with pytest.raises(ValueError, match="immutable"):
        version.save()


def test_versions_are_immutable_in_the_database_even_with_raw_sql(published_agent):
    version = AgentVersion.objects.get(agent=published_agent)
    with pytest.raises(DatabaseError, match="immutable"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE agents_agentversion SET note = 'hacked' WHERE id = %s", [version.pk])
    with pytest.raises(DatabaseError), transaction.atomic():
        AgentVersion.objects.filter(pk=version.pk).update(spec={"name": "hacked"})
    version.refresh_from_db()
    assert version.note == "" and version.spec["name"] == "Published"


def test_editing_the_draft_never_changes_a_published_version(org, owner, published_agent, api_as):
    _set_instructions(api_as(owner, org), published_agent, "Draft only.")
    detail = api_as(owner, org).get(f"/api/v1/agents/{published_agent.pk}/versions/1").json()
    assert detail["spec"]["instructions"] == "Be helpful."
