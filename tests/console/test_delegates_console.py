"""An agent's delegates in the console (console/delegates.py): the organization's agents and remote
agents side by side, added to and removed from the draft through the agent services, with what publishing would
say about them; the lead then publishes and delegates by those names. Viewers and builders without edit access
read, outsiders get 404, and another organization's agent or registration cannot be chosen."""

from __future__ import annotations

import pytest

from agents.models import Agent, AgentVersion
from capabilities.remote_agents.models import RemoteAgent
from tests import factories

pytestmark = pytest.mark.django_db


def _remote(org, name="Weather Desk", description="Answers questions about the weather.") -> RemoteAgent:
    return RemoteAgent.objects.create(organization=org, name=name, description=description,
                                      card_url="https://desk.partner.test/card.json",
                                      endpoint_url="https://desk.partner.test/rpc", card={"name": name})


@pytest.fixture
def lead(org, builder):
    return factories.published_agent(org, builder, name="Lead", capabilities=[{"id": "subagents"}])


@pytest.fixture
def researcher(org, builder):
    return factories.published_agent(org, builder, name="Researcher", description="Digs through sources.")


def page_of(agent) -> str:
    return f"/agents/{agent.pk}/delegates/"


def add(client, agent, **data):
    return client.post(f"{page_of(agent)}add", {"name": "", "description": "", "mode": "", **data})


def test_own_agents_and_remote_agents_are_offered_and_added_side_by_side(client_as, org, builder, lead,
                                                                         researcher, api_as):
    remote = _remote(org)
    client = client_as(builder, org)
    html = client.get(page_of(lead)).content.decode()
    assert f'value="agent:{researcher.pk}"' in html and f'value="remote:{remote.pk}"' in html
    assert f'value="agent:{lead.pk}"' not in html  # not itself

    assert add(client, lead, delegate=f"agent:{researcher.pk}", mode="async").status_code == 302
    assert add(client, lead, delegate=f"remote:{remote.pk}").status_code == 302

    lead.refresh_from_db()
    assert lead.draft_spec["subagents"] == [{"name": "Researcher", "agent_id": str(researcher.pk),
                                             "description": "Digs through sources.", "mode": "async"}]
    assert lead.draft_spec["external_agents"] == [{"name": "Weather-Desk", "remote_agent_id": str(remote.pk),
                                                   "description": "Answers questions about the weather.",
                                                   "mode": None}]
    html = client.get(page_of(lead)).content.decode()
    assert 'data-delegate="subagents:Researcher"' in html and 'data-delegate="external_agents:Weather-Desk"' in html
    assert f"/remote-agents/{remote.pk}/" in html and "data-publish-problems" not in html
    published = api_as(builder, org).post(f"/api/v1/agents/{lead.pk}/publish", {}, format="json")
    assert published.status_code == 201, published.content
    spec = AgentVersion.objects.filter(agent=lead).order_by("-number").first().spec
    assert [s["name"] for s in spec["subagents"]] == ["Researcher"]
    assert [e["name"] for e in spec["external_agents"]] == ["Weather-Desk"]


def test_a_name_another_delegate_has_is_shown_as_publish_would_refuse_it(client_as, org, builder, lead, researcher):
    remote = _remote(org)
    client = client_as(builder, org)
    add(client, lead, delegate=f"agent:{researcher.pk}", name="desk")
    assert add(client, lead, delegate=f"remote:{remote.pk}", name="desk").status_code == 302
    html = client.get(page_of(lead)).content.decode()
    assert "data-publish-problems" in html and "already has the name" in html


def test_without_delegation_enabled_the_page_says_so(client_as, org, builder, researcher):
    plain = factories.published_agent(org, builder, name="Plain")
    client = client_as(builder, org)
    assert "data-delegation-off" in client.get(page_of(plain)).content.decode()
    add(client, plain, delegate=f"agent:{researcher.pk}")
    assert "data-publish-problems" in client.get(page_of(plain)).content.decode()


def test_removing_a_delegate_takes_it_out_of_the_draft(client_as, org, builder, lead, researcher):
    remote = _remote(org)
    client = client_as(builder, org)
    add(client, lead, delegate=f"agent:{researcher.pk}")
    add(client, lead, delegate=f"remote:{remote.pk}")
    response = client.post(f"{page_of(lead)}remove", {"list": "external_agents", "name": "Weather-Desk"})
    assert response.status_code == 302
    lead.refresh_from_db()
    assert lead.draft_spec["external_agents"] == [] and len(lead.draft_spec["subagents"]) == 1
    assert client.post(f"{page_of(lead)}remove", {"list": "capabilities", "name": "subagents"}).status_code == 422
    lead.refresh_from_db()
    assert [c["id"] for c in lead.draft_spec["capabilities"]] == ["subagents"]


def test_another_organizations_agent_or_registration_cannot_be_chosen(client_as, org, builder, lead, outsider,
                                                                      outsider_org):
    theirs = factories.published_agent(outsider_org, outsider, name="Foreign")
    their_remote = _remote(outsider_org, name="Their Desk")
    client = client_as(builder, org)
    html = client.get(page_of(lead)).content.decode()
    assert str(theirs.pk) not in html and str(their_remote.pk) not in html
    for delegate in (f"agent:{theirs.pk}", f"remote:{their_remote.pk}", "remote:not-a-uuid"):
        response = add(client, lead, delegate=delegate)
        assert response.status_code == 422 and 'data-error-field="delegate"' in response.content.decode()
    lead.refresh_from_db()
    assert not lead.draft_spec.get("subagents") and not lead.draft_spec.get("external_agents")


def test_viewers_read_outsiders_get_404(client_as, org, builder, viewer, lead, researcher, outsider,
                                        outsider_org):
    add(client_as(builder, org), lead, delegate=f"agent:{researcher.pk}")
    before = Agent.objects.get(pk=lead.pk).draft_spec
    reader = client_as(viewer, org)
    html = reader.get(page_of(lead)).content.decode()
    assert 'data-delegate="subagents:Researcher"' in html and "data-read-only" in html
    assert "data-add-delegate" not in html and "data-remove" not in html
    assert add(reader, lead, delegate=f"agent:{researcher.pk}", name="again").status_code == 403
    assert reader.post(f"{page_of(lead)}remove", {"list": "subagents", "name": "Researcher"}).status_code == 403
    stranger = client_as(outsider, outsider_org)
    assert stranger.get(page_of(lead)).status_code == 404
    assert add(stranger, lead, delegate=f"agent:{researcher.pk}").status_code == 404
    assert stranger.post(f"{page_of(lead)}remove", {"list": "subagents", "name": "Researcher"}).status_code == 404
    assert Agent.objects.get(pk=lead.pk).draft_spec == before
