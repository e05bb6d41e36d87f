"""A rollout through the REST runs API — the admission `/v1`, `/mcp` and `/a2a` share (agents.chat.start_member_run):
a conversation started over REST keeps its first run's version on every later call, whatever its bucket says
after; a one-off call (no conversation) is its own sticky key, so both arms are reached."""

from __future__ import annotations

import pytest

from agents import rollouts
from agents.models import Run, RunStatus
from tests.runner.conftest import actor_of
from tests.runner.test_rollouts import two_versions  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _room(settings):
    settings.RATE_LIMIT_RUN_PER_MINUTE = 1000  # 36 calls in a test: the per-caller limit is not what is tested


def _call(client, agent, **body) -> Run:
    response = client.post(f"/api/v1/agents/{agent.pk}/run?wait=false", {"prompt": "Hello", **body}, format="json")
    assert response.status_code == 202, response.content
    run = Run.objects.select_related("version").get(pk=response.json()["run_id"])
    # Answered (the worker cannot see this test's transaction): the conversation takes its next turn.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.COMPLETED)
    return run


def test_a_rest_conversation_keeps_the_version_of_its_first_call(api_as, org, owner, two_versions):
    agent, v1, v2 = two_versions
    rollout = rollouts.start_rollout(actor=actor_of(owner, org), agent=agent, environment="production",
                                     candidate=2, share=50)
    client = api_as(owner, org)
    firsts = [_call(client, agent, conversation="new") for _ in range(12)]
    assert {run.version_id for run in firsts} == {v1.pk, v2.pk}  # 12 conversations at 50 %: p = 2 × 0.5¹² to fail
    for first in firsts:
        assert first.options["rollout"] == str(rollout.pk)
        expected = v2.pk if rollouts.bucket(rollout.pk, str(first.conversation_id)) < 50 * 100 else v1.pk
        assert first.version_id == expected
        later = [_call(client, agent, conversation=str(first.conversation_id)) for _ in range(2)]
        assert {run.version_id for run in later} == {first.version_id}
    # Raised to 99 %: a conversation begun on the base stays there.
    on_base = next(run for run in firsts if run.version_id == v1.pk)
    rollouts.advance_rollout(actor=actor_of(owner, org), rollout=rollout, share=99)
    assert _call(client, agent, conversation=str(on_base.conversation_id)).version_id == v1.pk


def test_one_off_calls_are_routed_each_by_its_own_run(api_as, org, owner, two_versions):
    agent, v1, v2 = two_versions
    rollout = rollouts.start_rollout(actor=actor_of(owner, org), agent=agent, environment="production",
                                     candidate=2, share=50)
    runs = [_call(api_as(owner, org), agent) for _ in range(12)]
    assert all(run.conversation_id is None for run in runs)
    assert {run.version_id for run in runs} == {v1.pk, v2.pk}
    for run in runs:
        expected = v2.pk if rollouts.bucket(rollout.pk, str(run.pk)) < 50 * 100 else v1.pk
        assert run.version_id == expected
