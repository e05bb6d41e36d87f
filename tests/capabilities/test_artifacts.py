"""artifacts: publish_artifact / read_artifact through a real pydantic-ai Agent on real Run rows.

Identity (organization, agent, environment, name), versions and `unchanged`, the first publish private to the
run's person, every retry naming what to change, and the refusals (results, never retries): a withheld
workspace file, a page the person cannot change, reading where no identified person listens.
"""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Run
from capabilities.artifacts import access
from capabilities.artifacts.models import Artifact, ArtifactVersion
from tests import factories
from tests.capabilities.helpers import Outcome, Script, agent_for, deps, spec

pytestmark = pytest.mark.django_db(transaction=True)
APPS = spec({"id": "artifacts"})
PAGE = "<!doctype html><h1>Weekly report</h1><p>Revenue: 120</p>"


@pytest.fixture
def setup(org, member, builder):
    agent = factories.published_agent(org, builder, name="Reporter", capabilities=[{"id": "artifacts"}])
    return org, member, agent


def run_for(org, user, agent, *, surface: str = "web", **options: Any) -> Run:
    return Run.objects.create(organization=org, agent=agent, version=agent.versions.first(), surface=surface,
                              user=user, options=options)


def go(run: Run, calls: list[tuple[str, dict[str, Any]]], the_spec=APPS, **scratch: Any) -> Outcome:
    run_deps = deps(run_id=str(run.pk), organization_id=str(run.organization_id), agent_id=str(run.agent_id),
                    user_id=run.user_id, surface=run.surface, conversation_id=None)
    run_deps.scratch.update(scratch)
    script = Script(calls)
    result = agent_for(the_spec, run_deps, script).run_sync("go", deps=run_deps)
    return Outcome(messages=result.all_messages(), script=script, output=result.output)


def publish(**args: Any) -> tuple[str, dict[str, Any]]:
    return ("publish_artifact", {"name": "weekly-report", **args})


def test_a_first_publish_is_private_to_the_runs_person_under_a_stable_link(setup, owner):
    org, person, agent = setup
    outcome = go(run_for(org, person, agent), [publish(content=PAGE, title="Weekly")])
    assert outcome.retries == []
    artifact = Artifact.objects.get()
    assert (artifact.name, artifact.environment, artifact.owner_id, artifact.visibility) == (
        "weekly-report", "production", person.pk, "private")
    assert f"/apps/{artifact.pk}/" in outcome.returns[0] and "version 1" in outcome.returns[0]
    assert "private to the person" in outcome.returns[0]
    other = factories.member(org, "member")
    assert access.level_for("member", other.pk, artifact) is None  # nobody else reads it yet


def test_the_next_publish_adds_a_version_and_identical_bytes_answer_unchanged(setup):
    org, person, agent = setup
    go(run_for(org, person, agent), [publish(content=PAGE)])
    again = go(run_for(org, person, agent, surface="schedule"), [publish(content=PAGE), publish(content=PAGE + "!")])
    assert again.returns[0].startswith("unchanged")
    assert "version 2" in again.returns[1]
    artifact = Artifact.objects.get()
    assert artifact.current_version == 2
    assert list(ArtifactVersion.objects.filter(artifact=artifact).values_list("number", flat=True)) == [1, 2]


def test_another_environment_is_another_application(setup):
    org, person, agent = setup
    go(run_for(org, person, agent), [publish(content=PAGE)])
    go(run_for(org, person, agent, environment="staging"), [publish(content=PAGE)])
    assert sorted(Artifact.objects.values_list("environment", flat=True)) == ["production", "staging"]


@pytest.mark.parametrize(("args", "named"), [
    ({}, "Give exactly one of path, content or edits (you gave none)"),
    ({"content": PAGE, "path": "/workspace/a.html"}, "you gave path and content"),
    ({"name": "Weekly Report", "content": PAGE}, "is not an application name"),
    ({"path": "/workspace/report.pdf"}, "extension an application cannot be"),
    ({"content": "   "}, "The page is empty"),
    ({"edits": [{"old_text": "a", "new_text": "b"}]}, "call read_artifact(name='weekly-report') first"),
])
def test_a_wrong_call_is_a_retry_naming_what_to_change(setup, args, named):
    org, person, agent = setup
    call = ("publish_artifact", {"name": "weekly-report", **args})
    outcome = go(run_for(org, person, agent), [call])
    assert named in outcome.retries[0]
    assert not Artifact.objects.exists()


def test_a_page_past_artifact_max_bytes_is_a_retry(setup, settings):
    settings.ARTIFACT_MAX_BYTES = 2048
    org, person, agent = setup
    outcome = go(run_for(org, person, agent), [publish(content="x" * 3000)])
    assert "an application is at most 2,048 bytes" in outcome.retries[0]
    assert not Artifact.objects.exists()


def test_edits_apply_to_the_version_read_and_a_bad_match_is_a_retry(setup):
    org, person, agent = setup
    go(run_for(org, person, agent), [publish(content=PAGE + "<p>x</p><p>x</p>")])
    read = ("read_artifact", {"name": "weekly-report"})
    missing = go(run_for(org, person, agent), [read, publish(edits=[{"old_text": "Revenue: 999", "new_text": "1"}])])
    assert missing.returns[0].startswith("weekly-report — version 1, html")
    assert "old_text does not occur in the page" in missing.retries[0]
    twice = go(run_for(org, person, agent), [read, publish(edits=[{"old_text": "<p>x</p>", "new_text": ""}])])
    assert "old_text occurs 2 times" in twice.retries[0]
    assert Artifact.objects.get().current_version == 1
    outcome = go(run_for(org, person, agent), [read, publish(edits=[{"old_text": "Revenue: 120",
                                                                      "new_text": "Revenue: 130"}])])
    assert "version 2" in outcome.returns[1]
    assert "Revenue: 130" in ArtifactVersion.objects.get(number=2).content


def test_edits_against_a_version_published_over_since_are_refused_not_overwritten(setup):
    org, person, agent = setup
    go(run_for(org, person, agent), [publish(content=PAGE)])
    run = run_for(org, person, agent)
    from capabilities.artifacts import services

    # The run reads version 1; another run publishes version 2; this run's edits must not land on it.
    first = go(run, [("read_artifact", {"name": "weekly-report"})])
    assert "version 1" in first.returns[0]
    services.publish(organization_id=org.pk, agent_id=agent.pk, environment="production", name="weekly-report",
                     owner_id=person.pk, text=PAGE + "<p>v2</p>", fmt="html")
    read_state = {"artifacts_read": {"weekly-report": (1, "html", PAGE)}}
    outcome = go(run, [publish(edits=[{"old_text": "Revenue: 120", "new_text": "Revenue: 1"}])], **read_state)
    assert "was published again (now version 2) since you read version 1" in outcome.retries[0]
    assert Artifact.objects.get().current_version == 2


def test_a_withheld_workspace_file_and_a_missing_workspace_are_results_not_retries(setup):
    org, person, agent = setup
    from capabilities.sandbox import store

    run = run_for(org, person, agent)
    workspace = store.open_for_run(run, "run")
    store.write(str(workspace.pk), "/workspace/report.html", PAGE.encode(), run_id=str(run.pk))
    store.write(str(workspace.pk), "/workspace/credentials.html", b"<p>SECRET=1</p>", run_id=str(run.pk))
    refused = go(run, [publish(path="/workspace/credentials.html")], workspace_id=str(workspace.pk))
    assert refused.retries == [] and refused.returns[0].startswith("Refused")
    no_workspace = go(run_for(org, person, agent), [publish(path="/workspace/report.html")])
    assert no_workspace.retries == [] and "no workspace in this run" in no_workspace.returns[0]
    assert not Artifact.objects.exists()
    ok = go(run, [publish(path="/workspace/report.html")], workspace_id=str(workspace.pk))
    assert "version 1" in ok.returns[0] and Artifact.objects.get().versions.get().content == PAGE


def test_publishing_over_a_page_the_person_cannot_change_is_a_refusal_and_adds_nothing(setup):
    org, person, agent = setup
    go(run_for(org, person, agent), [publish(content=PAGE)])
    colleague = factories.member(org, "member")
    outcome = go(run_for(org, colleague, agent), [publish(content=PAGE + "<p>mine now</p>"),
                                                   ("read_artifact", {"name": "weekly-report"})])
    assert outcome.retries == []
    assert outcome.returns[0].startswith("Refused") and "cannot change" in outcome.returns[0]
    assert "no application named 'weekly-report' that the person this run is for can open" in outcome.returns[1]
    assert Artifact.objects.get().current_version == 1


def test_a_grant_lets_a_colleague_read_and_publish(setup, owner):
    org, person, agent = setup
    go(run_for(org, person, agent), [publish(content=PAGE)])
    colleague = factories.member(org, "member")
    artifact = Artifact.objects.get()
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership
    from capabilities.artifacts import services

    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=person))
    services.share(actor=actor, artifact=artifact, user_id=colleague.pk, level="edit")
    outcome = go(run_for(org, colleague, agent), [("read_artifact", {"name": "weekly-report"}),
                                                   publish(content=PAGE + "<p>2</p>")])
    assert "version 1" in outcome.returns[0] and "version 2" in outcome.returns[1]


@pytest.mark.parametrize(("surface", "options"), [("embed", {}), ("schedule", {"trigger_kind": "schedule"}),
                                                  ("event", {"trigger_kind": "event"})])
def test_nothing_is_read_in_a_widget_an_embed_a_schedule_or_a_trigger(setup, surface, options):
    org, person, agent = setup
    go(run_for(org, person, agent), [publish(content=PAGE)])
    outcome = go(run_for(org, person if surface != "embed" else None, agent, surface=surface, **options),
                 [("read_artifact", {"name": "weekly-report"})])
    assert outcome.retries == [] and outcome.returns[0].startswith("Refused")
    assert PAGE not in str(outcome.returns[0])


def test_an_anonymous_run_cannot_publish(setup):
    org, _person, agent = setup
    outcome = go(run_for(org, None, agent, surface="embed"), [publish(content=PAGE)])
    assert outcome.returns[0].startswith("Refused") and not Artifact.objects.exists()


def test_read_artifact_says_when_the_source_is_cut(setup, settings):
    settings.ARTIFACT_MAX_BYTES = 300_000
    org, person, agent = setup
    big = "<p>" + "y" * 150_000 + "</p>"
    outcome = go(run_for(org, person, agent), [publish(content=big), ("read_artifact", {"name": "weekly-report"})])
    header, body = outcome.returns[1].split("\n", 1)
    assert "cut at 100,000 of 150,007 characters" in header and len(body) == 100_000
