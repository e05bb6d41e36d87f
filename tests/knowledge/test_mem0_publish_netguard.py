"""mem0's server address through the outbound guard at publish (issue 30) and in the client itself.

Publishing refuses a self-hosted base_url the run would refuse — a host outside MEM0_ALLOWED_HOSTS, or a listed
name resolving to a metadata address — naming the field; a listed server publishes. Every request the mem0 client
sends is checked and pinned (not only the check when a tool connects), so clearing a person's memories, which
calls mem0 without a tool, never sends the key to a name that now resolves to a metadata address either.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agenticos import netguard
from agents.models import Agent, AgentVersion
from knowledge import mem0 as mem0_client
from tests import factories
from tests.fakes.mem0_server import fake_mem0  # noqa: F401  (fixture)
from tests.knowledge.helpers import arun
from tests.knowledge.test_mem0 import _agent

NAME = "mem0.example.test"
FIELD = "capabilities[memory_mem0].config.base_url"


def _draft(org, owner, base_url: str):
    """An unpublished agent binding mem0 at `base_url` (drafts are not checked against the allow-list)."""
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership
    from agents import services

    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(
        user=owner, organization=org))
    secret = factories.secret(org, value="m0-publish-key")
    profile = factories.model_profile(org)
    return services.create_agent(actor=actor, spec={
        "name": "Memory agent", "instructions": "Remember things.", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "memory_mem0", "secret_id": str(secret.pk), "config": {"base_url": base_url}}]})


def _publish(api_as, org, owner, agent):
    return api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/publish", {"note": "mem0"}, format="json")


def _problems(response) -> dict[str, str]:
    return {p["field"]: p["message"] for p in response.json()["error"]["details"]["problems"]}


@pytest.mark.django_db
def test_a_host_outside_the_allow_list_is_refused_at_publish_naming_the_field(api_as, org, owner, settings):
    settings.MEM0_ALLOWED_HOSTS = ["mem0.internal.example"]
    agent = _draft(org, owner, "https://attacker.example.net")
    response = _publish(api_as, org, owner, agent)
    assert response.status_code == 422, response.content
    problems = _problems(response)
    assert set(problems) == {FIELD}
    assert "'attacker.example.net'" in problems[FIELD] and "MEM0_ALLOWED_HOSTS" in problems[FIELD]
    assert not AgentVersion.objects.filter(agent=agent).exists()


@pytest.mark.django_db
def test_self_hosting_on_a_deployment_that_lists_no_host_is_refused_at_publish(api_as, org, owner, settings):
    settings.MEM0_ALLOWED_HOSTS = []
    response = _publish(api_as, org, owner, _draft(org, owner, "https://mem0.internal.example"))
    assert response.status_code == 422 and "MEM0_ALLOWED_HOSTS is empty" in _problems(response)[FIELD]


@pytest.mark.django_db
@pytest.mark.parametrize("answer", [["169.254.169.254"], ["93.184.216.34", "fd00:ec2::254"]])
def test_a_listed_name_resolving_to_a_metadata_address_is_refused_at_publish(api_as, org, owner, settings, dns,
                                                                             answer):
    settings.MEM0_ALLOWED_HOSTS = [NAME]
    dns[NAME] = answer
    response = _publish(api_as, org, owner, _draft(org, owner, f"https://{NAME}"))
    assert response.status_code == 422
    assert "metadata" in _problems(response)[FIELD]


@pytest.mark.django_db
def test_a_listed_server_publishes_also_on_a_private_address_or_not_resolving_from_here(api_as, org, owner,
                                                                                      settings, dns):
    """Self-hosting on the LAN is what the list is for; a name this host cannot resolve is checked at connect."""
    settings.MEM0_ALLOWED_HOSTS = [NAME, "mem0.elsewhere.example"]
    dns[NAME] = ["10.1.2.3"]
    first = _publish(api_as, org, owner, _draft(org, owner, f"https://{NAME}"))
    assert first.status_code == 201, first.content
    other = _draft(org, owner, "https://mem0.elsewhere.example")
    assert _publish(api_as, org, owner, other).status_code == 201


@pytest.mark.django_db
def test_mem0_cloud_publishes_without_a_lookup_at_publish(api_as, org, owner, settings, dns):
    settings.MEM0_ALLOWED_HOSTS = []
    dns["api.mem0.ai"] = ["169.254.169.254"]  # checked when a tool connects (test_mem0_netguard), not here
    assert _publish(api_as, org, owner, _draft(org, owner, "")).status_code == 201


def _rebinding(monkeypatch, first: list[str], then: list[str]) -> list[str]:
    """localhost answers `first` to the first lookup and `then` to every later one (a DNS rebinding)."""
    asked: list[str] = []

    async def resolve(hostname: str) -> list[str]:
        asked.append(hostname)
        return list(first if len(asked) == 1 else then)

    monkeypatch.setattr(netguard, "resolve", resolve)
    return asked


@pytest.mark.django_db(transaction=True)
async def test_a_name_rebinding_after_the_tool_check_never_gets_the_key(org, owner, fake_mem0, monkeypatch):
    """The tool's check sees a listed loopback answer; the request the client then sends is checked again."""
    agent = await sync_to_async(_agent)(org, owner, base_url=fake_mem0.base_url)  # https://localhost:…
    asked = _rebinding(monkeypatch, ["127.0.0.1"], ["169.254.169.254"])
    outcome, _ = await arun(agent, [("remember", {"fact": "Prefers tea."})], user=owner)
    (answer,) = outcome.returns
    assert answer.startswith("Refused") and "metadata" in answer, answer
    assert len(asked) == 2 and fake_mem0.requests == [] and fake_mem0.memories == []


@pytest.mark.django_db
def test_clearing_a_person_through_a_name_now_resolving_to_metadata_sends_nothing(org, owner, member, fake_mem0,
                                                                                   monkeypatch):
    agent = _agent(org, owner, base_url=fake_mem0.base_url)
    _rebinding(monkeypatch, ["169.254.169.254"], ["169.254.169.254"])
    with pytest.raises(mem0_client.Mem0NotAllowed, match="metadata"):
        mem0_client.clear_owner_everywhere(org, owner=str(member.pk))
    assert fake_mem0.requests == []
    assert Agent.objects.filter(pk=agent.pk).exists()


@pytest.mark.django_db
def test_clearing_through_a_listed_server_still_works_pinned(org, owner, member, fake_mem0):
    agent = _agent(org, owner, base_url=fake_mem0.base_url)
    scope = f"{org.pk}:{agent.pk}:{member.pk}"
    fake_mem0.memories.append({"id": "1", "memory": "member likes tea", "user_id": scope})
    assert mem0_client.clear_owner_everywhere(org, owner=str(member.pk)) == 1
    assert fake_mem0.memories == [] and fake_mem0.requests[0]["headers"]["host"].startswith("localhost:")
