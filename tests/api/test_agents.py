"""Agents through the API: drafts, access from roles and grants, the list's query count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agenticos.models import AuditEvent
from agents.models import Agent
from governance import grants
from tests import factories
from tests.api.conftest import actor_of, make_agent


def test_a_builder_creates_an_agent_with_a_draft_and_owns_it(org, builder, api_as):
    response = api_as(builder, org).post(
        "/api/v1/agents", {"name": "Research Helper", "spec": {"instructions": "Dig."}}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["slug"] == "research-helper" and body["access"] == "publish"
    assert body["owner"]["email"] == builder.email
    assert body["draft_spec"]["instructions"] == "Dig." and body["draft_spec"]["name"] == "Research Helper"
    assert AuditEvent.objects.filter(action="agent.created", target_id=body["id"]).exists()


def test_a_duplicate_slug_is_a_409_naming_slug(org, builder, api_as):
    client = api_as(builder, org)
    client.post("/api/v1/agents", {"name": "A", "slug": "same"}, format="json")
    response = client.post("/api/v1/agents", {"name": "B", "slug": "same"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["details"] == {"field": "slug"}


def test_the_same_slug_is_fine_in_another_organization(org, builder, outsider, outsider_org, api_as):
    api_as(builder, org).post("/api/v1/agents", {"name": "A", "slug": "same"}, format="json")
    assert api_as(outsider, outsider_org).post("/api/v1/agents", {"name": "A", "slug": "same"},
                                               format="json").status_code == 201


def test_an_invalid_draft_is_a_422_with_field_paths(org, builder, api_as):
    agent = make_agent(builder, org)
    response = api_as(builder, org).patch(f"/api/v1/agents/{agent.pk}", {"spec": {
        "name": "Helper",
        "max_steps": 0,
        "surprise": True,
        "capabilities": [{"id": "clock", "approval": "sometimes"}],
    }}, format="json")
    assert response.status_code == 422
    fields = {p["field"] for p in response.json()["error"]["details"]["problems"]}
    assert fields == {"spec.max_steps", "spec.surprise", "spec.capabilities[clock].approval"}


def test_patching_the_draft_replaces_the_spec_and_keeps_the_name_in_sync(org, builder, api_as):
    agent = make_agent(builder, org)
    response = api_as(builder, org).patch(f"/api/v1/agents/{agent.pk}", {"spec": {
        "name": "Renamed", "instructions": "New.", "capabilities": [{"id": "clock", "config": {"timezone": "UTC"}}],
    }}, format="json")
    assert response.status_code == 200
    agent.refresh_from_db()
    assert agent.name == "Renamed" and agent.draft_spec["capabilities"][0]["config"] == {"timezone": "UTC"}


def test_a_viewer_can_read_but_not_edit(org, builder, viewer, api_as):
    agent = make_agent(builder, org)
    client = api_as(viewer, org)
    read = client.get(f"/api/v1/agents/{agent.pk}")
    assert read.status_code == 200 and read.json()["access"] == "view"
    response = client.patch(f"/api/v1/agents/{agent.pk}", {"name": "Mine now"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["details"] == {"needed": "edit", "have": "view"}


def test_a_builder_cannot_edit_another_builders_agent_without_a_grant(org, builder, api_as):
    other = factories.member(org, "builder")
    agent = make_agent(other, org)
    client = api_as(builder, org)
    assert client.get(f"/api/v1/agents/{agent.pk}").json()["access"] == "use"
    assert client.patch(f"/api/v1/agents/{agent.pk}", {"name": "X"}, format="json").status_code == 403


def test_a_builder_cannot_even_see_another_builders_private_agent(org, builder, api_as):
    other = factories.member(org, "builder")
    agent = make_agent(other, org, visibility="private")
    client = api_as(builder, org)
    assert client.get(f"/api/v1/agents/{agent.pk}").status_code == 404
    assert client.patch(f"/api/v1/agents/{agent.pk}", {"name": "X"}, format="json").status_code == 404
    assert [a["id"] for a in client.get("/api/v1/agents").json()["results"]] == []


def test_a_grant_lets_a_builder_edit_a_private_agent_and_revoking_takes_it_back(org, builder, api_as):
    other = factories.member(org, "builder")
    agent = make_agent(other, org, visibility="private")
    share = api_as(other, org).post(f"/api/v1/agents/{agent.pk}/grants", {"user_id": builder.pk, "level": "edit"},
                                    format="json")
    assert share.status_code == 201
    client = api_as(builder, org)
    assert [a["access"] for a in client.get("/api/v1/agents").json()["results"]] == ["edit"]
    assert client.patch(f"/api/v1/agents/{agent.pk}", {"name": "Shared"}, format="json").status_code == 200
    assert client.post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json").status_code == 403
    listed = api_as(other, org).get(f"/api/v1/agents/{agent.pk}/grants").json()
    assert listed == [{"user_id": builder.pk, "email": builder.email, "level": "edit"}]

    assert api_as(other, org).delete(f"/api/v1/agents/{agent.pk}/grants/{builder.pk}").status_code == 204
    assert client.get(f"/api/v1/agents/{agent.pk}").status_code == 404
    actions = list(AuditEvent.objects.filter(target_id=str(agent.pk)).values_list("action", flat=True))
    assert "agent.shared" in actions and "agent.unshared" in actions


def test_a_grant_lifts_a_viewer_above_their_role_and_is_the_stronger_of_the_two(org, owner, viewer, as_actor):
    agent = make_agent(owner, org)
    assert grants.agent_access(as_actor(viewer, org), agent) == "view"
    grants.share_agent(actor=as_actor(owner, org), agent=agent, user_id=viewer.pk, level="publish")
    assert grants.agent_access(as_actor(viewer, org), agent) == "publish"
    # The owner role already gives publish; a weaker grant does not lower it.
    grants.share_agent(actor=as_actor(owner, org), agent=agent, user_id=owner.pk, level="view")
    assert grants.agent_access(as_actor(owner, org), agent) == "publish"


def test_nobody_can_grant_more_than_they_have_nor_share_with_an_outsider(org, builder, outsider, api_as):
    other = factories.member(org, "member")
    agent = make_agent(builder, org)
    from agenticos.errors import Forbidden, NotFound

    grants.share_agent(actor=actor_of(builder, org), agent=agent, user_id=other.pk, level="edit")
    with pytest.raises(Forbidden):
        # A member with an edit grant cannot hand out publish.
        grants.share_agent(actor=actor_of(other, org), agent=agent, user_id=other.pk, level="publish")
    with pytest.raises(NotFound):
        grants.share_agent(actor=actor_of(builder, org), agent=agent, user_id=outsider.pk, level="view")


def test_an_admin_edits_any_agent_even_a_private_one(org, builder, admin_user, api_as):
    agent = make_agent(builder, org, visibility="private")
    client = api_as(admin_user, org)
    assert client.patch(f"/api/v1/agents/{agent.pk}", {"name": "Fixed"}, format="json").status_code == 200


def test_changing_visibility_needs_publish_access(org, owner, member, api_as):
    agent = make_agent(owner, org, visibility="private")
    grants.share_agent(actor=actor_of(owner, org), agent=agent, user_id=member.pk, level="edit")
    client = api_as(member, org)
    assert client.patch(f"/api/v1/agents/{agent.pk}", {"visibility": "organization"}, format="json").status_code == 403
    assert client.patch(f"/api/v1/agents/{agent.pk}", {"name": "ok"}, format="json").status_code == 200


def test_deleting_an_agent_removes_its_versions_environments_and_grants(org, owner, member, published_agent, api_as):
    grants.share_agent(actor=actor_of(owner, org), agent=published_agent, user_id=member.pk, level="use")
    assert api_as(owner, org).delete(f"/api/v1/agents/{published_agent.pk}").status_code == 204
    assert not Agent.objects.filter(pk=published_agent.pk).exists()
    assert grants.grant_levels(member.pk) == {}
    assert AuditEvent.objects.get(action="agent.deleted").target_name == "Published"


def _list_queries(client) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get("/api/v1/agents")
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_the_agents_list_runs_a_fixed_number_of_queries(org, owner, builder, demo_profile, api_as):
    client = api_as(builder, org)
    for i in range(2):
        agent = make_agent(owner, org, name=f"A{i}", profile=demo_profile, visibility="private")
        grants.share_agent(actor=actor_of(owner, org), agent=agent, user_id=builder.pk, level="use")
        from agents import services

        services.publish_agent(actor=actor_of(owner, org), agent=agent)
    few = _list_queries(client)
    for i in range(8):
        agent = make_agent(owner, org, name=f"B{i}", profile=demo_profile)
        from agents import services

        services.publish_agent(actor=actor_of(owner, org), agent=agent)
        make_agent(builder, org, name=f"C{i}")
    many = _list_queries(client)
    assert few == many
    # membership, count, agents, environments (prefetch), grant levels (+ content type, cached after first use)
    assert many <= 6, many
    results = client.get("/api/v1/agents").json()["results"]
    assert len(results) == 18
    assert {r["access"] for r in results if r["name"].startswith("A")} == {"use"}
    assert {r["access"] for r in results if r["name"].startswith("C")} == {"publish"}


def test_an_agent_with_runs_cannot_be_deleted_and_says_why(org, owner, published_agent, api_as):
    from agents.models import AgentVersion, Run

    Run.objects.create(organization=org, agent=published_agent, version=AgentVersion.objects.get(agent=published_agent),
                       surface="api")
    response = api_as(owner, org).delete(f"/api/v1/agents/{published_agent.pk}")
    assert response.status_code == 409 and response.json()["error"]["code"] == "in_use"
    assert Agent.objects.filter(pk=published_agent.pk).exists()
