"""A rollout starts only when its candidate version passes the agent's gating suite (run on that version)."""

from __future__ import annotations

import pytest

from agenticos.errors import Invalid
from agents import rollouts
from agents import services as agent_services
from agents.models import Environment, Rollout
from evals.models import SuiteRun
from tests.evals.conftest import make_agent, suite_with
from tests.evals.test_targets_and_gate import _edit_draft
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_candidate_failing_the_gating_suite_is_not_rolled_out(org, owner, scripted_openai, celery_worker):
    agent, v1, _profile = make_agent(org, owner, scripted_openai)
    _edit_draft(org, owner, agent, instructions="Now rude.")
    agent_services.publish_agent(actor=actor_of(owner, org), agent=agent)  # v2, no gate yet
    suite_with(org, owner, agent, gates_publish=True, cases=[
        {"name": "polite", "prompt": "[case:polite] hi", "checks": [{"kind": "contains", "value": "please"}]},
    ])
    scripted_openai.script("polite", Reply.text("go away"), Reply.text("yes please"))
    actor = actor_of(owner, org)

    with pytest.raises(Invalid) as refused:
        rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=10)

    assert refused.value.code == "evals_failed" and "rolled out" in refused.value.message
    assert not Rollout.objects.exists()
    assert Environment.objects.get(agent=agent, name="production").rollout_id is None
    gate_run = SuiteRun.objects.get(pk=refused.value.details["suite_runs"][0])
    assert gate_run.purpose == SuiteRun.Purpose.PUBLISH_GATE and gate_run.target == "v2"

    started = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=10)
    assert started.status == Rollout.Status.ACTIVE and started.base_id == v1.pk
