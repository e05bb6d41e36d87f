"""The console's Availability section changes an agent's embeds only with edit access to the agent — the rule
the REST API holds (embeds/api.py, tests/api/test_role_matrix.py) and bindings hold everywhere.

The console loads the agent at *view* level, so the check lives in `embeds.services` itself
(`require_agent_access(actor, agent, EDIT)` in create/update/pause/delete/logo, as `channelbots.services` does
for bindings): a builder who may only use (or only view) someone else's agent cannot create a public page for it,
nor pause or delete its owner's embeds.
"""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from agents import services as agents
from embeds.models import Embed
from governance import grants
from tests import factories
from tests.api.conftest import actor_of, make_agent
from tests.api.state import changed_tables, database_state

pytestmark = pytest.mark.django_db


@pytest.fixture
def owners_agent(org, owner):
    """An organization-wide agent the owner owns: a builder may use it, not edit it."""
    return factories.published_agent(org, owner, name="Owner's agent")


@pytest.fixture
def viewing_builder(org, owner):
    """A builder holding a view grant on the owner's private agent."""
    return factories.member(org, "builder")


def test_a_builder_who_may_only_use_an_agent_cannot_publish_it_from_the_console(client_as, org, builder,
                                                                                  owners_agent):
    client = client_as(builder, org)  # signing in writes its own audit row (identity.receivers), before the snapshot
    before = database_state()
    response = client.post(f"/agents/{owners_agent.pk}/embeds",
                                            {"kind": "page", "name": "Mine now", "environment": "production"})
    assert response.status_code == 403
    assert changed_tables(before, database_state()) == []
    assert not Embed.objects.filter(agent=owners_agent).exists()


@pytest.mark.parametrize("action", ["pause", "delete"])
def test_a_builder_with_only_a_view_grant_cannot_pause_or_delete_the_owners_embed(client_as, org, owner,
                                                                                   viewing_builder, action):
    private = make_agent(owner, org, name="Private one", slug="private-one", visibility="private",
                         profile=factories.model_profile(org))
    agents.publish_agent(actor=actor_of(owner, org), agent=private)
    grants.share_agent(actor=actor_of(owner, org), agent=private, user_id=viewing_builder.pk, level="view")
    embed = factories.embed(private, kind="page", created_by=owner)
    client = client_as(viewing_builder, org)  # signing in is audited: sign in before the snapshot
    before = database_state()
    response = client.post(f"/agents/{private.pk}/embeds/{embed.pk}/{action}")
    assert response.status_code == 403
    assert changed_tables(before, database_state()) == []
    assert Embed.objects.get(pk=embed.pk).is_paused is False
    assert not AuditEvent.objects.filter(action__startswith="embed.").exists()
