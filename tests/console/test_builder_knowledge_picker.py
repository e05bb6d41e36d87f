"""The Builder's Knowledge card picks the collections the agent searches: it names the bound ones (also when the
draft was written in YAML), warns when the capability is on with none bound, offers only collections the person
may bind, and refuses a private collection without a grant or another organization's, saving nothing."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, builder):
    return factories.published_agent(org, builder, name="Helper", capabilities=[{"id": "knowledge"}])


def card(page: str) -> str:
    return page.split('id="cap-knowledge"')[1].split("</article>")[0]


def save(client, agent, *ids, json=True):
    data = {"enabled": "on", "collection_picker": "1", "collection_ids": [str(i) for i in ids]}
    headers = {"HTTP_ACCEPT": "application/json"} if json else {}
    return client.post(f"/agents/{agent.pk}/toolbox/knowledge", data, **headers)


def test_on_with_no_collection_the_card_warns_and_a_builder_binds_one(client_as, org, builder, agent):
    handbook = factories.collection(org, "Handbook", created_by=builder)
    factories.document(handbook, "a.txt", b"alpha")
    client = client_as(builder, org)
    html = card(client.get(f"/agents/{agent.pk}/").content.decode())
    assert "data-no-collection-warning" in html and f'data-collection-option="{handbook.pk}"' in html
    assert "1 document" in html

    response = save(client, agent, handbook.pk)

    assert response.status_code == 200 and response.json()["saved"] is True
    assert Agent.objects.get(pk=agent.pk).draft_spec["collection_ids"] == [str(handbook.pk)]
    html = card(client.get(f"/agents/{agent.pk}/").content.decode())
    assert "Searches: Handbook." in html and "data-no-collection-warning" not in html
    assert save(client, agent).json()["saved"] is True
    assert Agent.objects.get(pk=agent.pk).draft_spec["collection_ids"] == []


def test_a_collection_bound_in_yaml_is_named_on_the_card(client_as, org, builder, agent):
    handbook = factories.collection(org, "Handbook", created_by=builder)
    Agent.objects.filter(pk=agent.pk).update(draft_spec={**agent.draft_spec, "collection_ids": [str(handbook.pk)]})
    html = card(client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode())
    assert "Searches: Handbook." in html
    assert "checked" in html.split(f'id="kc-{handbook.pk}"')[1].split(">")[0]


def test_a_private_collection_without_a_grant_is_neither_offered_nor_bindable(client_as, org, owner, builder, agent):
    private = factories.collection(org, "Board minutes", created_by=owner, visibility="private")
    client = client_as(builder, org)
    assert "Board minutes" not in client.get(f"/agents/{agent.pk}/").content.decode()
    before = Agent.objects.get(pk=agent.pk).draft_spec
    response = save(client, agent, private.pk)
    assert response.status_code == 422 and set(response.json()["problems"]) == {"collection_ids"}
    assert Agent.objects.get(pk=agent.pk).draft_spec == before


def test_another_organizations_collection_is_refused(client_as, org, builder, agent, outsider_org):
    foreign = factories.collection(outsider_org, "Their secrets")
    client = client_as(builder, org)
    assert "Their secrets" not in client.get(f"/agents/{agent.pk}/").content.decode()
    response = save(client, agent, foreign.pk)
    assert response.status_code == 422 and "collection_ids" in response.json()["problems"]
    assert "collection_ids" not in Agent.objects.get(pk=agent.pk).draft_spec or \
        Agent.objects.get(pk=agent.pk).draft_spec["collection_ids"] == []


def test_a_viewer_sees_the_bound_collection_but_binds_nothing(client_as, org, builder, viewer, agent):
    handbook = factories.collection(org, "Handbook", created_by=builder)
    client = client_as(viewer, org)
    assert f'data-collection-option="{handbook.pk}"' in card(client.get(f"/agents/{agent.pk}/").content.decode())
    assert save(client, agent, handbook.pk).status_code == 403
    assert Agent.objects.get(pk=agent.pk).draft_spec.get("collection_ids", []) == []
