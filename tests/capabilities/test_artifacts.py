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
    from workspaces import store

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


def test_an_api_key_run_reads_back_and_edits_what_it_may_publish(setup):
    """A key acts for its person: where publish_artifact works, read_artifact does too, so an API run can edit."""
    from agenticos.models import ApiKey

    org, person, agent = setup
    key = ApiKey.objects.create(organization=org, user=person, name="ci", prefix="ak_test", key_hash="x" * 64)
    api_run = Run.objects.create(organization=org, agent=agent, version=agent.versions.first(), surface="api",
                                 user=person, api_key=key)
    go(api_run, [publish(content=PAGE)])

    outcome = go(api_run, [("read_artifact", {"name": "weekly-report"}),
                           publish(edits=[{"old_text": "Revenue: 120", "new_text": "Revenue: 130"}])])

    assert outcome.returns[0].startswith("weekly-report — version 1, html"), outcome.returns
    assert "version 2" in outcome.returns[1]
    # Still only what the key's person can open: another member's private page stays unread.
    stranger = factories.member(org, "member")
    their_run = Run.objects.create(organization=org, agent=agent, version=agent.versions.first(), surface="api",
                                   user=stranger, api_key=ApiKey.objects.create(
                                       organization=org, user=stranger, name="theirs", prefix="ak_them",
                                       key_hash="y" * 64))
    refused = go(their_run, [("read_artifact", {"name": "weekly-report"})])
    assert "no application named" in refused.returns[0] and "Revenue" not in refused.returns[0]


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


# ------------------------------------------------------------------ /api/v1/artifacts


def _published(org, agent, owner, text=PAGE, name="weekly-report") -> Artifact:
    from capabilities.artifacts import services

    return services.publish(organization_id=org.pk, agent_id=agent.pk, environment="production", name=name,
                            owner_id=owner.pk, text=text, fmt="html").artifact


def test_the_api_lists_mine_and_shared_with_me_and_hides_a_private_page(setup, api_as, viewer):
    org, person, agent = setup
    mine = _published(org, agent, person)
    theirs = _published(org, agent, factories.member(org, "member"), name="their-page")
    Artifact.objects.filter(pk=theirs.pk).update(visibility="organization")
    client = api_as(person, org)
    every = client.get("/api/v1/artifacts").json()["results"]
    assert sorted((a["name"], a["access"]) for a in every) == [("their-page", "view"), ("weekly-report", "edit")]
    assert [a["name"] for a in client.get("/api/v1/artifacts?shared=mine").json()["results"]] == ["weekly-report"]
    assert [a["name"] for a in client.get("/api/v1/artifacts?shared=with_me").json()["results"]] == ["their-page"]
    assert [a["name"] for a in api_as(viewer, org).get("/api/v1/artifacts").json()["results"]] == ["their-page"]
    assert api_as(viewer, org).get(f"/api/v1/artifacts/{mine.pk}").status_code == 404


def test_the_api_shows_one_with_its_current_version_and_its_versions(setup, api_as):
    org, person, agent = setup
    artifact = _published(org, agent, person)
    _published(org, agent, person)  # identical bytes: unchanged, no version
    _published(org, agent, person, text=PAGE + "<p>2</p>")
    client = api_as(person, org)
    detail = client.get(f"/api/v1/artifacts/{artifact.pk}").json()
    assert (detail["current_version"], detail["format"], detail["content"]) == (2, "html", PAGE + "<p>2</p>")
    assert detail["url"].endswith(f"/apps/{artifact.pk}/")
    versions = client.get(f"/api/v1/artifacts/{artifact.pk}/versions").json()
    assert [v["number"] for v in versions["results"]] == [2, 1] and versions["count"] == 2


def test_grants_as_for_collections_and_a_viewer_never_widens_who_reads(setup, api_as, viewer):
    org, person, agent = setup
    artifact = _published(org, agent, person)
    colleague = factories.member(org, "member")
    client = api_as(person, org)
    created = client.post(f"/api/v1/artifacts/{artifact.pk}/grants", {"user_id": viewer.pk, "level": "edit"},
                          format="json")
    assert created.status_code == 201 and created.json()["level"] == "edit"
    as_viewer = api_as(viewer, org)
    assert as_viewer.get(f"/api/v1/artifacts/{artifact.pk}").json()["access"] == "edit"
    refused = as_viewer.post(f"/api/v1/artifacts/{artifact.pk}/grants", {"user_id": colleague.pk, "level": "view"},
                             format="json")
    assert refused.status_code == 403
    assert as_viewer.patch(f"/api/v1/artifacts/{artifact.pk}", {"visibility": "organization"},
                           format="json").status_code == 403
    assert api_as(colleague, org).get(f"/api/v1/artifacts/{artifact.pk}").status_code == 404
    assert client.patch(f"/api/v1/artifacts/{artifact.pk}", {"visibility": "organization"},
                        format="json").json()["visibility"] == "organization"
    assert api_as(colleague, org).get(f"/api/v1/artifacts/{artifact.pk}").json()["access"] == "view"
    assert client.delete(f"/api/v1/artifacts/{artifact.pk}/grants/{viewer.pk}").status_code == 204
    assert [g["user_id"] for g in client.get(f"/api/v1/artifacts/{artifact.pk}/grants").json()["results"]] == []


def test_another_organizations_application_is_a_404_on_every_route(setup, api_as, outsider, outsider_org):
    org, person, agent = setup
    artifact = _published(org, agent, person)
    Artifact.objects.filter(pk=artifact.pk).update(visibility="organization")
    client = api_as(outsider, outsider_org)
    assert client.get("/api/v1/artifacts").json()["results"] == []
    for path in (f"/api/v1/artifacts/{artifact.pk}", f"/api/v1/artifacts/{artifact.pk}/versions",
                 f"/api/v1/artifacts/{artifact.pk}/grants"):
        response = client.get(path)
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", path
    assert client.post(f"/api/v1/artifacts/{artifact.pk}/grants", {"user_id": outsider.pk, "level": "edit"},
                       format="json").status_code == 404
    assert client.patch(f"/api/v1/artifacts/{artifact.pk}", {"visibility": "private"},
                        format="json").status_code == 404
    # Naming the organization without belonging to it is a 404 too, and the owner cannot share outward.
    assert api_as(outsider, org).get(f"/api/v1/artifacts/{artifact.pk}").status_code == 404
    assert api_as(person, org).post(f"/api/v1/artifacts/{artifact.pk}/grants",
                                    {"user_id": outsider.pk, "level": "view"}, format="json").status_code == 404
    assert access.GRANTS.holders(artifact) == []
    artifact.refresh_from_db()
    assert artifact.visibility == "organization"


def test_every_vendored_library_is_named_with_its_version_and_license():
    from pathlib import Path

    vendor = Path(__file__).resolve().parents[2] / "static" / "vendor"
    listed = (vendor / "VERSIONS.txt").read_text()
    files = [p.relative_to(vendor).as_posix() for p in vendor.rglob("*") if p.is_file() and p.name != "VERSIONS.txt"]
    assert files and [f for f in files if f.split("/")[-1] not in listed] == []
