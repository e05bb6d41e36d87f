"""POST /api/v1/agents/{id}/replays and the replay's reads: a person replays only runs they may read, another
organization's agent, replay or run is 404, a viewer is refused, and a refusal writes nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Run
from evals.models import ReplaySet
from tests.evals.conftest import make_agent

pytestmark = pytest.mark.django_db


def _recorded(agent, version, user, **fields) -> Run:
    return Run.objects.create(organization=agent.organization, agent=agent, version=version, surface="web",
                              user=user, prompt="Hi", output="Hello.", status="completed", **fields)


@pytest.fixture
def recorded(org, owner, fake_openai):
    agent, version, _profile = make_agent(org, owner, fake_openai)
    return agent, version, _recorded(agent, version, owner)


def _start(client, agent, run_id, **extra):
    return client.post(reverse("api-agent-replays", kwargs={"agent_id": agent.pk}),
                       {"selection": {"run_ids": [str(run_id)]}, **extra}, format="json")


def test_an_owner_replays_a_run_and_reads_it_side_by_side(recorded, owner, org, api_as):
    agent, _version, run = recorded
    client = api_as(owner, org)

    started = _start(client, agent, run.pk, target="v1", cap_usd="0.5", on_mismatch="read_only")

    assert started.status_code == 202, started.json()
    body = client.get(reverse("api-replay", kwargs={"replay_id": started.json()["id"]})).json()
    assert body["target"] == "v1" and body["on_mismatch"] == "read_only" and body["status"] == "queued"
    assert body["summary"]["total"] == 1
    assert body["results"][0]["original_run_id"] == str(run.pk) and body["results"][0]["recorded_output"] == "Hello."
    listed = client.get(reverse("api-agent-replays", kwargs={"agent_id": agent.pk})).json()
    assert [item["id"] for item in listed["results"]] == [body["id"]]
    cancelled = client.post(reverse("api-replay-cancel", kwargs={"replay_id": body["id"]}))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


def test_an_outsider_gets_404_for_the_agent_the_replay_and_the_run(recorded, owner, org, outsider, outsider_org,
                                                                   api_as):
    agent, _version, run = recorded
    replay_id = _start(api_as(owner, org), agent, run.pk).json()["id"]
    stranger = api_as(outsider, outsider_org)
    assert _start(stranger, agent, run.pk).status_code == 404
    assert stranger.get(reverse("api-replay", kwargs={"replay_id": replay_id})).status_code == 404
    assert stranger.post(reverse("api-replay-cancel", kwargs={"replay_id": replay_id})).status_code == 404
    # Naming the other organization while not a member of it is 404 too.
    assert api_as(outsider, org).get(reverse("api-replay", kwargs={"replay_id": replay_id})).status_code == 404
    assert ReplaySet.objects.count() == 1


def test_another_organizations_run_is_404_and_starts_nothing(recorded, owner, org, outsider, outsider_org,
                                                             fake_openai, api_as):
    agent, _version, _run = recorded
    their_agent, their_version, _profile = make_agent(outsider_org, outsider, fake_openai, name="Theirs")
    theirs = _recorded(their_agent, their_version, outsider)

    response = _start(api_as(owner, org), agent, theirs.pk)

    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert not ReplaySet.objects.exists()


def test_a_viewer_is_refused_and_nothing_is_written(recorded, org, viewer, api_as):
    agent, _version, run = recorded
    refused = _start(api_as(viewer, org), agent, run.pk)
    assert refused.status_code == 403 and "error" in refused.json()
    assert not ReplaySet.objects.exists()


def test_a_replay_of_a_run_someone_may_not_read_shows_them_its_verdict_without_its_words(
        recorded, org, owner, member, builder, api_as):
    from evals.models import Suite
    from governance import grants
    from tests.runner.conftest import actor_of

    agent, _version, run = recorded
    replay_id = _start(api_as(owner, org), agent, run.pk).json()["id"]
    ReplaySet.objects.get(pk=replay_id).results.update(replayed_output="Hi again.", tool_calls=[
        {"tool_name": "lookup", "verdict": "different_arguments", "recorded_args": {"name": "Ada"},
         "replayed_args": {"name": "Lovelace"}, "answered_by": "refused"}])
    url = reverse("api-replay", kwargs={"replay_id": replay_id})

    mine = api_as(owner, org).get(url).json()["results"][0]
    theirs = api_as(member, org).get(url).json()["results"][0]  # a member sees the agent, not the owner's runs

    assert mine["redacted"] is False and mine["recorded_output"] == "Hello." and mine["replayed_output"] == "Hi again."
    assert theirs["redacted"] is True and theirs["recorded_output"] == theirs["replayed_output"] == ""
    assert theirs["tool_calls"] == [{"tool_name": "lookup", "verdict": "different_arguments", "recorded_args": None,
                                     "replayed_args": None, "answered_by": "refused"}]
    assert theirs["original_run_id"] == str(run.pk) and theirs["status"] == mine["status"]

    # An editor of the agent who may not read the run cannot copy it into a case either.
    grants.share_agent(actor=actor_of(owner, org), agent=agent, user_id=builder.pk, level="edit")
    suite = Suite.objects.create(organization=org, agent=agent, name="Smoke")
    result_id = ReplaySet.objects.get(pk=replay_id).results.get().pk
    made = api_as(builder, org).post(reverse("api-replay-make-case", kwargs={"replay_id": replay_id,
                                                                            "result_id": result_id}),
                                     {"suite_id": str(suite.pk)}, format="json")
    assert made.status_code == 404 and not suite.cases.exists()
