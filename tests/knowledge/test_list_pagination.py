"""Every knowledge list is the project's limit/offset page (count, next, previous, results), as the schema
says — never a bare, unbounded array — and a page holds only the caller's organization's rows."""

from __future__ import annotations

import pytest

from agenticos.tenancy import actor_for_membership
from knowledge import grants
from knowledge.models import ContextFile, MemoryNote, Skill, SkillProposal
from tests import factories

pytestmark = pytest.mark.django_db

PAGE_KEYS = {"count", "next", "previous", "results"}


def _actor(user, org):
    from agenticos.models import Membership

    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, capabilities=[{"id": "memory_files"}])


@pytest.fixture
def three_of_each(org, owner, agent):
    """Three rows in every knowledge list of `org`, seen by its owner."""
    collections = [factories.collection(org, f"c{i}") for i in range(3)]
    for i in range(3):
        factories.document(collections[0], f"doc{i}.txt", b"words")
        ContextFile.objects.create(organization=org, name=f"ctx{i}", body="b")
        skill = Skill.objects.create(organization=org, name=f"skill-{i}", description="d")
        SkillProposal.objects.create(organization=org, skill=skill, path="SKILL.md", content="x")
        MemoryNote.objects.create(organization=org, agent=agent, owner_user=owner, name=f"n{i}.md", content="c")
        grants.share_collection(actor=_actor(owner, org), collection=collections[0],
                                user_id=factories.member(org, "viewer").pk, level="view")
    return collections


def _lists(collections) -> list[str]:
    first = collections[0].pk
    return [
        "/api/v1/collections/", f"/api/v1/collections/{first}/documents/", f"/api/v1/collections/{first}/grants/",
        "/api/v1/context/", "/api/v1/skills/", "/api/v1/skills/proposals/", "/api/v1/memory/",
    ]


def test_every_knowledge_list_is_a_page_with_a_count_and_links(api_as, owner, org, three_of_each):
    client = api_as(owner, org)
    for url in _lists(three_of_each):
        body = client.get(url).json()
        assert PAGE_KEYS <= set(body), url
        assert body["count"] == 3 and len(body["results"]) == 3, url
        page = client.get(url, {"limit": 2, "offset": 0}).json()
        assert len(page["results"]) == 2 and page["next"] and page["previous"] is None, url
        rest = client.get(url, {"limit": 2, "offset": 2}).json()
        assert len(rest["results"]) == 1 and rest["next"] is None, url
        # A stable order: the two pages together are the whole list, once each.
        ids = [str(r.get("id") or r.get("user_id")) for r in page["results"] + rest["results"]]
        assert sorted(ids) == sorted(str(r.get("id") or r.get("user_id")) for r in body["results"]), url


def test_my_memory_page_still_says_which_agents_cannot_be_listed(api_as, owner, org, three_of_each):
    body = api_as(owner, org).get("/api/v1/memory/", {"limit": 1}).json()
    assert set(body) == PAGE_KEYS | {"not_listed_mem0_agents"}
    assert body["count"] == 3 and len(body["results"]) == 1 and body["not_listed_mem0_agents"] == []


def test_a_page_is_never_larger_than_the_maximum(api_as, owner, org):
    ContextFile.objects.bulk_create(ContextFile(organization=org, name=f"ctx{i:03}") for i in range(205))
    body = api_as(owner, org).get("/api/v1/context/", {"limit": 100000}).json()
    assert body["count"] == 205 and len(body["results"]) == 200
    assert len(api_as(owner, org).get("/api/v1/context/").json()["results"]) == 50  # the default page


def test_a_deployment_admins_read_of_a_persons_memory_is_a_page_too(api_as, owner, org, three_of_each):
    staff = factories.user(is_staff=True, is_superuser=True)
    body = api_as(staff).get(f"/api/v1/memory/person/{owner.pk}/",
                             {"organization_id": str(org.pk), "reason": "DSAR", "limit": 2}).json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]


def test_an_outsider_pages_through_only_their_own_organization(api_as, outsider, outsider_org, three_of_each):
    client = api_as(outsider, outsider_org)
    for url in ("/api/v1/collections/", "/api/v1/context/", "/api/v1/skills/", "/api/v1/skills/proposals/",
                "/api/v1/memory/"):
        body = client.get(url).json()
        assert body["count"] == 0 and body["results"] == [], url
    first = three_of_each[0].pk
    for url in (f"/api/v1/collections/{first}/documents/", f"/api/v1/collections/{first}/grants/"):
        assert client.get(url).status_code == 404, url


@pytest.mark.parametrize("user_id", [0, -1, 2**63, 2**100])
def test_sharing_a_collection_with_a_user_id_past_the_column_is_a_400_and_grants_nothing(api_as, owner, org,
                                                                                        user_id):
    collection = factories.collection(org, "Shared")
    response = api_as(owner, org).post(f"/api/v1/collections/{collection.pk}/grants/",
                                       {"user_id": user_id, "level": "view"}, format="json")
    assert response.status_code == 400 and "user_id" in response.json()["error"]["details"]
    assert grants.collection_grants(collection) == []


@pytest.mark.parametrize("user_id", [0, 2**63])
def test_clearing_memory_for_a_user_id_past_the_column_is_a_400(api_as, owner, org, agent, user_id):
    MemoryNote.objects.create(organization=org, agent=agent, owner_user=owner, name="kept.md", content="c")
    response = api_as(owner, org).post("/api/v1/memory/clear/", {"user_id": user_id}, format="json")
    assert response.status_code == 400 and "user_id" in response.json()["error"]["details"]
    assert MemoryNote.objects.filter(owner_user=owner).exists()


def test_the_schema_documents_each_knowledge_list_as_the_page_it_returns(client):
    doc = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    expected = {
        "/api/v1/collections": "PaginatedCollectionList",
        "/api/v1/collections/{id}/documents": "PaginatedDocumentList",
        "/api/v1/collections/{id}/grants": "PaginatedCollectionGrantList",
        "/api/v1/context": "PaginatedContextFileList",
        "/api/v1/skills": "PaginatedSkillList",
        "/api/v1/skills/proposals": "PaginatedSkillProposalList",
        "/api/v1/memory": "MyMemoryPage",
        "/api/v1/memory/person/{user_id}": "PaginatedMemoryNoteList",
    }
    for path, component in expected.items():
        operation = (doc["paths"].get(path) or doc["paths"][path + "/"])["get"]
        schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": f"#/components/schemas/{component}"}, path
        assert PAGE_KEYS <= set(doc["components"]["schemas"][component]["properties"]), component
