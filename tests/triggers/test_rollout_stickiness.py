"""A rollout on a trigger's environment: the trigger is the sticky key, so every firing runs the same version."""

from __future__ import annotations

import pytest

from agents import rollouts
from agents import services as agent_services
from agents.models import Run
from tests.runner.conftest import actor_of
from tests.triggers.conftest import make_trigger

pytestmark = pytest.mark.django_db


def test_every_firing_of_a_trigger_runs_the_version_of_its_first(api_as, org, owner, agent):
    actor = actor_of(owner, org)
    agent_services.update_agent(actor=actor, agent=agent, spec={**agent.draft_spec, "instructions": "Candidate."})
    agent_services.publish_agent(actor=actor, agent=agent)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=99)
    client = api_as(owner, org)
    seen = []
    for name in ("Nightly", "Hourly", "Weekly"):
        trigger, _ = make_trigger(owner, org, agent, name=name)
        fired = [client.post(f"/api/v1/triggers/{trigger.pk}/fire").json()["run_id"] for _ in range(3)]
        runs = list(Run.objects.filter(pk__in=fired).select_related("version"))
        assert len(runs) == 3 and len({run.version.number for run in runs}) == 1
        assert all(run.options["rollout"] == str(rollout.pk) for run in runs)
        expected = 2 if rollouts.bucket(rollout.pk, f"trigger:{trigger.pk}") < 99 * 100 else 1
        assert runs[0].version.number == expected
        seen.append(expected)
    assert 2 in seen  # three triggers all on the base at 99 %: once in a million
