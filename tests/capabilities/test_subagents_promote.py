"""A specialist the model wrote can be kept as a draft agent by a person who may edit agents — and only so."""

from __future__ import annotations

import pytest

from agents.models import Agent, AgentVersion
from tests.capabilities.test_subagents import Team, _pair, call, returns
from tests.runner.test_execute import run_now, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def written(org, owner, scripted_model):
    from tests import factories

    team = Team()
    scripted_model(team.model())
    team.role("You are the lead.",
              call("delegate", {"description": "Translate 'hello'.", "instructions": "You are a translator.",
                                "name": "translator", "model": "Team"}),
              lambda m: "Lead: " + str(returns(m)[-1]))
    team.role("You are a translator.", "hola")
    _r, lead, version = _pair(org, owner, factories.model_profile(org, label="Team"), config={"allow_dynamic": True})
    run = start(org, owner, lead, version, prompt="translate")
    frames = run_now(run)
    task_id = next(f["data"]["task_id"] for f in frames if f["type"] == "subagent_started")
    return run, task_id


def _promote(api_as, user, org, run, task_id):
    return api_as(user, org).post(f"/api/v1/runs/{run.pk}/delegations/{task_id}/promote", {}, format="json")


def test_an_editor_keeps_a_written_specialist_as_a_draft_they_own(org, owner, api_as, written):
    run, task_id = written
    before = Agent.objects.count()
    response = _promote(api_as, owner, org, run, task_id)
    assert response.status_code == 201, response.json()
    agent = Agent.objects.get(pk=response.json()["agent_id"])
    assert agent.name == "translator" and agent.owner_id == owner.pk
    assert agent.draft_spec["instructions"] == "You are a translator."
    assert agent.draft_spec["model_profile_id"]
    assert not AgentVersion.objects.filter(agent=agent).exists()  # a draft: nothing is published
    assert Agent.objects.count() == before + 1


def test_weaker_roles_outsiders_and_unknown_tasks_keep_nothing(org, owner, member, viewer, outsider, outsider_org,
                                                               api_as, written):
    run, task_id = written
    before = Agent.objects.count()
    assert _promote(api_as, member, org, run, task_id).status_code == 403
    assert _promote(api_as, viewer, org, run, task_id).status_code == 403
    assert _promote(api_as, outsider, outsider_org, run, task_id).status_code == 404
    response = _promote(api_as, owner, org, run, "nope")
    assert response.status_code == 404 and response.json()["error"]["code"]
    assert Agent.objects.count() == before
