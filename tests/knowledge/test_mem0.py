"""memory_mem0 against a local fake mem0 over HTTPS: scope {org}:{agent}:{owner}, the same audience rules as
memory_files, the base_url rule, and clearing a person reaching mem0 through every kept version."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from knowledge import mem0 as mem0_client
from knowledge.models import MemoryNote
from tests import factories
from tests.knowledge.helpers import arun


def _agent(org, owner, *, base_url=None, key="m0-test-key", name="Helper"):
    secret = factories.secret(org, value=key)
    config = {"base_url": base_url} if base_url is not None else {}
    return factories.published_agent(org, owner, name=name, capabilities=[
        {"id": "memory_mem0", "secret_id": str(secret.pk), "config": config}])


@pytest.mark.django_db(transaction=True)
async def test_remember_and_recall_use_the_full_scope_as_user_id(org, owner, fake_mem0):
    agent = await sync_to_async(_agent)(org, owner, base_url=fake_mem0.base_url)
    outcome, _ = await arun(agent, [("remember", {"fact": "Prefers replies in Polish."}),
                                    ("recall", {"query": "which language in replies"})], user=owner)
    assert outcome.returns == ["Remembered.", "- Prefers replies in Polish."]
    assert fake_mem0.memories[0]["user_id"] == f"{org.pk}:{agent.pk}:{owner.pk}"
    assert all(r["headers"]["authorization"] == "Token m0-test-key" for r in fake_mem0.requests)
    assert "m0-test-key" not in str(outcome.messages)


@pytest.mark.django_db(transaction=True)
async def test_another_person_or_a_group_chat_recalls_nothing_of_it(org, owner, member, fake_mem0):
    agent = await sync_to_async(_agent)(org, owner, base_url=fake_mem0.base_url)
    await arun(agent, [("remember", {"fact": "Owner salary is confidential."})], user=owner)
    as_member, _ = await arun(agent, [("recall", {"query": "salary"})], user=member)
    in_group, _ = await arun(agent, [("recall", {"query": "salary"})], user=owner, surface="slack",
                             options={"chat_type": "group", "chat_key": "C1"})
    assert as_member.returns[0].startswith("Nothing remembered")
    assert in_group.returns[0].startswith("Nothing remembered")
    assert fake_mem0.requests[-1]["json"]["user_id"] == f"{org.pk}:{agent.pk}:slack:C1"


@pytest.mark.django_db(transaction=True)
async def test_an_embed_run_has_no_memory_and_never_calls_mem0(org, owner, fake_mem0):
    agent = await sync_to_async(_agent)(org, owner, base_url=fake_mem0.base_url)
    outcome, _ = await arun(agent, [("remember", {"fact": "x"})], surface="embed")
    assert outcome.returns[0].startswith("Refused") and fake_mem0.requests == []


@pytest.mark.django_db(transaction=True)
async def test_a_self_hosted_host_outside_the_allow_list_is_refused_before_any_request(org, owner, fake_mem0,
                                                                                      settings):
    agent = await sync_to_async(_agent)(org, owner, base_url=fake_mem0.base_url)
    settings.MEM0_ALLOWED_HOSTS = []
    outcome, _ = await arun(agent, [("recall", {"query": "x"})], user=owner)
    assert outcome.returns[0].startswith("Refused") and "MEM0_ALLOWED_HOSTS is empty" in outcome.returns[0]
    settings.MEM0_ALLOWED_HOSTS = ["mem0.example.com"]
    outcome, _ = await arun(agent, [("recall", {"query": "x"})], user=owner)
    assert "not in MEM0_ALLOWED_HOSTS" in outcome.returns[0] and fake_mem0.requests == []


def test_a_plain_http_base_url_is_refused(settings):
    settings.MEM0_ALLOWED_HOSTS = ["mem0.internal"]
    with pytest.raises(mem0_client.Mem0NotAllowed, match="https"):
        mem0_client.check_base_url("http://mem0.internal")
    assert mem0_client.check_base_url("") == mem0_client.CLOUD_BASE_URL


@pytest.mark.django_db
def test_clearing_a_person_reaches_mem0_for_every_version_that_bound_it(api_as, org, owner, member, fake_mem0):
    agent = _agent(org, owner, base_url=fake_mem0.base_url)
    scope = f"{org.pk}:{agent.pk}:{member.pk}"
    fake_mem0.memories.append({"id": "1", "memory": "member likes tea", "user_id": scope})
    fake_mem0.memories.append({"id": "2", "memory": "owner likes coffee", "user_id": f"{org.pk}:{agent.pk}:{owner.pk}"})
    # The current draft no longer binds mem0: the published version still does, and clearing must find it.
    agent.draft_spec = {**agent.draft_spec, "capabilities": []}
    agent.save()
    MemoryNote.objects.create(organization=org, agent=agent, owner_user=member, name="n.md", content="x")
    response = api_as(member, org).post("/api/v1/memory/clear", {}, format="json")
    assert response.status_code == 200 and response.json() == {"notes_deleted": 1, "mem0_spaces_cleared": 1}
    assert [m["user_id"] for m in fake_mem0.memories] == [f"{org.pk}:{agent.pk}:{owner.pk}"]


@pytest.mark.django_db
def test_a_failing_mem0_stops_the_clearing_and_keeps_the_rows_for_a_retry(api_as, org, owner, member, fake_mem0):
    agent = _agent(org, owner, base_url=fake_mem0.base_url, key="wrong-key")
    MemoryNote.objects.create(organization=org, agent=agent, owner_user=member, name="n.md", content="x")
    response = api_as(member, org).post("/api/v1/memory/clear", {}, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "mem0_unavailable"
    assert "wrong-key" not in response.content.decode()
    assert MemoryNote.objects.filter(owner_user=member).exists()


@pytest.mark.django_db
def test_settings_memory_names_agents_bound_to_mem0_instead_of_listing_them(api_as, org, owner, fake_mem0):
    _agent(org, owner, base_url=fake_mem0.base_url, name="Semantic")
    body = api_as(owner, org).get("/api/v1/memory").json()
    assert body["not_listed_mem0_agents"] == ["Semantic"]
