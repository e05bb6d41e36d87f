"""memory_mem0 checks the server's address when a tool connects, not only its name against MEM0_ALLOWED_HOSTS:
a listed name that resolves to a metadata address, or mem0's cloud name answering a private one, never gets
the key."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from tests.fakes.mem0_server import fake_mem0  # noqa: F401  (fixture)
from tests.knowledge.helpers import arun
from tests.knowledge.test_mem0 import _agent

NAME = "mem0.example.test"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("answer", [["169.254.169.254"], ["fd00:ec2::254"], ["93.184.216.34", "169.254.170.2"]])
async def test_a_listed_name_resolving_to_a_metadata_address_is_refused_at_connect(org, owner, fake_mem0, settings,
                                                                                  dns, answer):
    settings.MEM0_ALLOWED_HOSTS = [NAME, "localhost"]
    # Published while the name does not resolve from here (publish refuses a metadata answer it can see).
    agent = await sync_to_async(_agent)(org, owner, base_url=f"https://{NAME}:{fake_mem0.base_url.rsplit(':', 1)[1]}")
    dns[NAME] = answer
    outcome, _ = await arun(agent, [("remember", {"fact": "Prefers tea."}), ("recall", {"query": "tea"})], user=owner)
    assert all(r.startswith("Refused") and "metadata" in r for r in outcome.returns), outcome.returns
    assert fake_mem0.requests == []


@pytest.mark.django_db(transaction=True)
async def test_the_cloud_name_answering_a_private_address_is_refused(org, owner, settings, dns):
    settings.MEM0_ALLOWED_HOSTS = []
    dns["api.mem0.ai"] = ["10.20.30.40"]
    agent = await sync_to_async(_agent)(org, owner)  # no base_url: mem0's cloud
    outcome, _ = await arun(agent, [("recall", {"query": "x"})], user=owner)
    (answer,) = outcome.returns
    assert answer.startswith("Refused") and "10.20.30.40" in answer and "MEM0_ALLOWED_HOSTS" in answer


@pytest.mark.django_db(transaction=True)
async def test_a_listed_self_hosted_server_on_a_private_address_still_works(org, owner, fake_mem0, settings):
    """Self-hosting on the LAN is what the list is for: a listed name may resolve to a private address."""
    agent = await sync_to_async(_agent)(org, owner, base_url=fake_mem0.base_url)  # https://localhost:…
    outcome, _ = await arun(agent, [("remember", {"fact": "Prefers tea."})], user=owner)
    assert outcome.returns == ["Remembered."] and len(fake_mem0.requests) == 1
