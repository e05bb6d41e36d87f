"""The AgenticOS starter agent's first web conversation in an organization is its welcome interview (spec: "El agent
AgenticOS termina con ellas su entrevista de bienvenida" — with connection cards): every turn of that conversation is
told to hold it and end with propose_setup's connection cards for the services named, knowing which are connected;
any later conversation, another agent, or a surface that draws no cards is not."""

from __future__ import annotations

import pytest

from agents.models import Agent, Conversation
from capabilities.follow_ups.capability import STARTER_SLUG
from tests import factories
from tests.capabilities.helpers import Script, agent_for, deps

pytestmark = pytest.mark.django_db

INTERVIEW = "This conversation is the welcome interview"


@pytest.fixture
def starter(org, owner):
    agent = factories.published_agent(org, owner, name="AgenticOS", capabilities=[{"id": "follow_ups"}])
    Agent.objects.filter(pk=agent.pk).update(slug=STARTER_SLUG)
    return agent


def told(agent, user, conversation, *, surface: str = "web") -> str:
    run_deps = deps(organization_id=str(agent.organization_id), agent_id=str(agent.pk), user_id=user.pk,
                    surface=surface, can_ask_user=surface == "web",
                    conversation_id=str(conversation.pk) if conversation else None)
    script = Script([])
    agent_for(_spec(agent), run_deps, script).run_sync("hello", deps=run_deps)
    return script.requests[0].instructions or ""


def _spec(agent):
    from agents.spec import AgentSpec

    return AgentSpec.model_validate(agent.versions.first().spec)


def conversation(agent, user, **extra) -> Conversation:
    return Conversation.objects.create(organization_id=agent.organization_id, agent=agent, owner=user, **extra)


def test_the_starters_first_web_conversation_is_the_interview_ending_with_connection_cards(starter, owner, builder):
    first = conversation(starter, owner)
    said = told(starter, owner, first)
    assert INTERVIEW in said
    assert "End the interview with propose_setup: a connection card (kind connection, its server_key)" in said
    # It knows which services wait for a Connect, so its cards name only those.
    assert "Linear (server_key linear): Issues, projects and cycles. Not connected." in said
    # Every turn of that conversation, whoever in the organization writes in it.
    assert INTERVIEW in told(starter, owner, first)

    # A later conversation, even the next person's first, is an ordinary one.
    later = conversation(starter, builder)
    assert INTERVIEW not in told(starter, builder, later)
    assert "Services the person can connect" in told(starter, builder, later)


def test_another_agent_a_card_less_surface_and_another_organization_hold_no_interview(starter, org, owner,
                                                                                     outsider, outsider_org):
    other = factories.published_agent(org, owner, name="Helper", capabilities=[{"id": "follow_ups"}])
    assert INTERVIEW not in told(other, owner, conversation(other, owner))
    # The starter's first conversation on a surface that draws no cards (a chat app's thread).
    assert INTERVIEW not in told(starter, owner, conversation(starter, owner, surface="slack"), surface="slack")
    # Another organization's starter has its own first conversation: ours does not count for it, nor theirs for us.
    theirs = factories.published_agent(outsider_org, outsider, name="AgenticOS",
                                       capabilities=[{"id": "follow_ups"}])
    Agent.objects.filter(pk=theirs.pk).update(slug=STARTER_SLUG)
    assert INTERVIEW in told(theirs, outsider, conversation(theirs, outsider))


def test_the_starter_the_platform_installs_is_the_one_that_interviews():
    """The slug is written here and in the bootstrap (a layer above): they must name the same agent, and the
    starter must bind follow_ups (propose_setup) to end the interview with cards."""
    from agents.management.commands.platform_bootstrap import AGENT_SLUG, starter_capabilities

    assert AGENT_SLUG == STARTER_SLUG
    assert "follow_ups" in starter_capabilities()
