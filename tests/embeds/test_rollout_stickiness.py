"""A rollout on the embed's environment: each visitor keeps one version across turns; the runs record it."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from agents import rollouts
from agents import services as agent_services
from agents.models import Run
from tests.embeds.conftest import frames_until_end
from tests.embeds.test_socket_turns import answer, ask, open_socket
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db(transaction=True)


def _rollout_to_v2(org, owner, agent, share):
    actor = actor_of(owner, org)
    agent_services.update_agent(actor=actor, agent=agent, spec={**agent.draft_spec, "instructions": "Candidate."})
    agent_services.publish_agent(actor=actor, agent=agent)
    return rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=share)


async def test_each_visitor_keeps_the_version_of_their_first_turn(widget, org, owner, agent, dispatched):
    rollout = await database_sync_to_async(_rollout_to_v2)(org, owner, agent, 99)
    versions_by_visitor = []
    for _visitor in range(6):
        comm = await open_socket(widget)  # no continuity key: a new visitor, a new thread
        first = await ask(comm, dispatched)
        await answer(first)
        await frames_until_end(comm)
        second = await ask(comm, dispatched, text="And to Spain?")
        await answer(second)
        await frames_until_end(comm)
        await comm.disconnect()
        runs = await database_sync_to_async(
            lambda ids=(first, second): list(Run.objects.filter(pk__in=ids).select_related("version")))()
        assert len({run.version.number for run in runs}) == 1
        assert len({run.conversation_id for run in runs}) == 1
        assert all(run.options["rollout"] == str(rollout.pk) for run in runs)
        versions_by_visitor.append(runs[0].version.number)
    # At 99 % all six visitors on the base would happen once in 10^12.
    assert 2 in versions_by_visitor
