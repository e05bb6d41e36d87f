"""Publishing checks the follow-ups model like every other profile reference: another organization's profile id
(or a profile of this organization that is not a chat model) is refused with its field path, and nothing is
published; this organization's chat profile is accepted."""

from __future__ import annotations

import pytest

from agenticos.errors import Invalid
from agents import services
from agents.models import AgentVersion
from tests import factories
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db


def _draft(org, owner, next_steps_profile_id: str):
    main = factories.model_profile(org, label="main")
    spec = {"name": "Refunds", "instructions": "Answer refund questions.", "model_profile_id": str(main.pk),
            "capabilities": [{"id": "follow_ups", "config": {"model_profile_id": next_steps_profile_id}}]}
    actor = actor_of(owner, org)
    return actor, services.create_agent(actor=actor, name="Refunds", spec=spec)


def _refusal(actor, agent) -> list[dict]:
    with pytest.raises(Invalid) as refused:
        services.publish_agent(actor=actor, agent=agent)
    assert not AgentVersion.objects.filter(agent=agent).exists()
    return [p for p in refused.value.details["problems"] if "follow_ups" in p["field"]]


def test_another_organizations_profile_is_refused_at_publish(org, owner):
    outsider_org = factories.organization(name="Outsider")
    theirs = factories.model_profile(outsider_org, label="their next steps")
    actor, agent = _draft(org, owner, str(theirs.pk))
    assert _refusal(actor, agent) == [{
        "field": "capabilities[follow_ups].config.model_profile_id",
        "message": "No such chat model profile in this organization.",
    }]


def test_an_embedding_profile_of_the_organization_is_refused_at_publish(org, owner):
    embedder = factories.model_profile(org, "openai", "text-embedding-3-small", label="embedder", kind="embedding")
    actor, agent = _draft(org, owner, str(embedder.pk))
    assert [p["field"] for p in _refusal(actor, agent)] == ["capabilities[follow_ups].config.model_profile_id"]


def test_the_organizations_own_chat_profile_is_published(org, owner):
    mine = factories.model_profile(org, label="next steps")
    actor, agent = _draft(org, owner, str(mine.pk))
    version = services.publish_agent(actor=actor, agent=agent)
    bound = next(c for c in version.spec["capabilities"] if c["id"] == "follow_ups")
    assert bound["config"]["model_profile_id"] == str(mine.pk)
