"""Tags on recorded runs (evals/run_tags.py): an editor of the agent tags runs they may read, a replay set picks
runs by tag; another organization's run or agent is 404, someone else's run without runs:view is 404, weaker roles
are refused, and a refusal writes nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agenticos.errors import Invalid
from agenticos.models import AuditEvent
from agents.models import Conversation, Run
from evals import replays, run_tags
from evals.models import ReplaySet, RunTag
from governance import grants
from tests import factories
from tests.evals.conftest import make_agent
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db


def _recorded(agent, version, user, prompt: str = "Hi") -> Run:
    conversation = Conversation.objects.create(organization=agent.organization, agent=agent, owner=user, title="t")
    return Run.objects.create(organization=agent.organization, agent=agent, version=version, surface="web",
                              user=user, conversation=conversation, prompt=prompt, output="Hello.",
                              status="completed")


@pytest.fixture
def recorded(org, owner, fake_openai):
    agent, version, _profile = make_agent(org, owner, fake_openai)
    return agent, version, _recorded(agent, version, owner)


def _url(agent, run_id) -> str:
    return reverse("api-agent-run-tags-detail", kwargs={"agent_id": agent.pk, "run_id": run_id})


def test_an_editor_tags_a_run_reads_its_tags_and_the_agents_tag_counts(recorded, org, owner, api_as):
    agent, _version, run = recorded
    client = api_as(owner, org)

    put = client.put(_url(agent, run.pk), {"tags": ["Refunds", " edge-case ", "refunds"]}, format="json")

    assert put.status_code == 200, put.json()
    assert put.json() == {"run_id": str(run.pk), "tags": ["edge-case", "refunds"]}
    assert client.get(_url(agent, run.pk)).json()["tags"] == ["edge-case", "refunds"]
    listed = client.get(reverse("api-agent-run-tags", kwargs={"agent_id": agent.pk}))
    assert listed.json() == [{"name": "edge-case", "runs": 1}, {"name": "refunds", "runs": 1}]
    audit = AuditEvent.objects.get(action="run.tags_set")
    assert audit.details["added"] == ["refunds", "edge-case"] and audit.details["run_id"] == str(run.pk)

    # A PUT replaces the list: what it leaves out is removed.
    assert client.put(_url(agent, run.pk), {"tags": ["refunds"]}, format="json").json()["tags"] == ["refunds"]
    assert list(RunTag.objects.values_list("name", flat=True)) == ["refunds"]


def test_bad_tags_are_refused_naming_each_and_nothing_is_written(recorded, org, owner, api_as):
    agent, _version, run = recorded
    refused = api_as(owner, org).put(_url(agent, run.pk), {"tags": ["ok", "two words", "-dash", "é"]}, format="json")

    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "invalid"
    assert [p["field"] for p in error["details"]["problems"]] == ["tags.1", "tags.2", "tags.3"]
    too_many = api_as(owner, org).put(_url(agent, run.pk), {"tags": [f"t{i}" for i in range(21)]}, format="json")
    assert too_many.status_code == 400 and "error" in too_many.json()
    assert not RunTag.objects.exists() and not AuditEvent.objects.filter(action="run.tags_set").exists()


def test_weaker_roles_are_refused_and_an_outsider_gets_404(recorded, org, owner, viewer, member, builder, outsider,
                                                           outsider_org, api_as):
    agent, version, run = recorded
    RunTag.objects.create(organization=org, agent=agent, run=run, name="kept")
    for user in (viewer, member, builder):  # none may edit the owner's agent
        assert api_as(user, org).put(_url(agent, run.pk), {"tags": ["x"]}, format="json").status_code == 403
    stranger = api_as(outsider, outsider_org)
    assert stranger.get(_url(agent, run.pk)).status_code == 404
    assert stranger.put(_url(agent, run.pk), {"tags": ["x"]}, format="json").status_code == 404
    assert stranger.get(reverse("api-agent-run-tags", kwargs={"agent_id": agent.pk})).status_code == 404
    # Naming the organization while not a member of it is 404 too.
    assert api_as(outsider, org).get(_url(agent, run.pk)).status_code == 404
    assert list(RunTag.objects.values_list("name", flat=True)) == ["kept"]


def test_another_organizations_run_and_another_agents_run_are_404(recorded, org, owner, outsider, outsider_org,
                                                                 fake_openai, api_as):
    agent, _version, _run = recorded
    their_agent, their_version, _profile = make_agent(outsider_org, outsider, fake_openai, name="Theirs")
    theirs = _recorded(their_agent, their_version, outsider)
    sibling = factories.published_agent(org, owner, name="Sibling")
    other_agents = _recorded(sibling, sibling.versions.get(number=1), owner)
    client = api_as(owner, org)

    for run_id in (theirs.pk, other_agents.pk, "not-a-uuid"):
        assert client.get(_url(agent, run_id)).status_code == 404
        response = client.put(_url(agent, run_id), {"tags": ["stolen"]}, format="json")
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert not RunTag.objects.exists()


def test_an_editor_without_runs_view_tags_only_their_own_runs_and_counts_only_those(
        recorded, org, owner, builder, api_as):
    agent, version, owners_run = recorded
    grants.share_agent(actor=actor_of(owner, org), agent=agent, user_id=builder.pk, level="edit")
    own = _recorded(agent, version, builder)
    RunTag.objects.create(organization=org, agent=agent, run=owners_run, name="private-talk")
    client = api_as(builder, org)

    assert client.get(_url(agent, owners_run.pk)).status_code == 404
    assert client.put(_url(agent, owners_run.pk), {"tags": ["x"]}, format="json").status_code == 404
    assert client.put(_url(agent, own.pk), {"tags": ["mine"]}, format="json").status_code == 200
    # The owner's tag is on a run the builder may not read: it is not counted (nor named) for them.
    assert client.get(reverse("api-agent-run-tags", kwargs={"agent_id": agent.pk})).json() == [
        {"name": "mine", "runs": 1}]
    assert sorted(RunTag.objects.values_list("name", flat=True)) == ["mine", "private-talk"]


def test_a_replay_set_picks_runs_by_tag(recorded, org, owner, api_as):
    agent, version, first = recorded
    second, untagged = _recorded(agent, version, owner, "Refund?"), _recorded(agent, version, owner, "Weather?")
    actor = actor_of(owner, org)
    for run in (first, second):
        run_tags.set_tags(actor=actor, agent=agent, run=run, tags=["refunds"])
    run_tags.set_tags(actor=actor, agent=agent, run=untagged, tags=["weather"])

    chosen, understood = replays.select_runs(actor, agent, {"tag": "Refunds"})
    assert {r.pk for r in chosen} == {first.pk, second.pk} and understood == {"tag": "refunds"}
    assert replays.select_runs(actor, agent, {"tag": "nobody"})[0] == []
    with pytest.raises(Invalid) as bad:
        replays.select_runs(actor, agent, {"tag": "two words"})
    assert [p["field"] for p in bad.value.details["problems"]] == ["tag"]

    started = api_as(owner, org).post(reverse("api-agent-replays", kwargs={"agent_id": agent.pk}),
                                      {"selection": {"tag": "weather"}}, format="json")
    assert started.status_code == 202, started.json()
    replay_set = ReplaySet.objects.get()
    assert replay_set.selection == {"tag": "weather"}
    assert [r.original_id for r in replay_set.results.all()] == [untagged.pk]


def test_a_runs_tags_go_with_its_conversation(recorded, org, owner):
    agent, _version, run = recorded
    run_tags.set_tags(actor=actor_of(owner, org), agent=agent, run=run, tags=["refunds"])
    run.conversation.delete()
    assert not RunTag.objects.exists()
