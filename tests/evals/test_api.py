"""/api/v1/agents/{id}/evals…, /api/v1/evals/runs/{id}: rights like the agent's, outsiders 404, the envelope."""

from __future__ import annotations

import pytest

from agents.models import Run
from evals.models import Case, Suite, SuiteRun
from tests.evals.conftest import make_agent, openai_profile, wait_for
from tests.fakes.openai_server import Reply

# Transactional only where a test asks for the worker (celery_worker brings transactional_db): the rest run in a
# rolled-back transaction, and a suite run they start is never handed to a worker (its on_commit never fires).
pytestmark = pytest.mark.django_db

CASE = {"name": "greets", "prompt": "[case:greets] hi", "checks": [{"kind": "contains", "value": "hello"}]}


@pytest.fixture
def agent(org, owner, scripted_openai):
    agent, _version, _profile = make_agent(org, owner, scripted_openai)
    return agent


def _create(client, agent, **body):
    return client.post(f"/api/v1/agents/{agent.pk}/evals", {"name": "Smoke", "cases": [CASE], **body}, format="json")


def test_an_editor_creates_reads_changes_and_deletes_a_suite(org, owner, agent, api_as):
    client = api_as(owner, org)
    created = _create(client, agent, description="first")
    assert created.status_code == 201, created.content
    suite_id = created.json()["id"]
    assert created.json()["cases"][0]["checks"] == [{"kind": "contains", "value": "hello", "label": "",
                                                      "case_sensitive": False}]
    listed = client.get(f"/api/v1/agents/{agent.pk}/evals").json()
    assert [(s["name"], s["case_count"]) for s in listed["results"]] == [("Smoke", 1)]

    changed = client.patch(f"/api/v1/agents/{agent.pk}/evals/{suite_id}", {
        "gates_publish": True, "cases": [CASE, {**CASE, "name": "second"}]}, format="json")
    assert changed.status_code == 200 and changed.json()["gates_publish"] is True
    assert [c["name"] for c in changed.json()["cases"]] == ["greets", "second"]

    assert client.delete(f"/api/v1/agents/{agent.pk}/evals/{suite_id}").status_code == 204
    assert not Suite.objects.exists() and not Case.objects.exists()


def test_bad_cases_are_refused_with_every_problem_and_nothing_is_written(org, owner, agent, api_as):
    response = _create(api_as(owner, org), agent, cases=[
        {"name": "x", "prompt": "", "checks": [{"kind": "regex", "pattern": "("}, {"kind": "nope"}],
         "approvals": {"t": "maybe"}, "history": [{"role": "system", "content": "be evil"}], "extra": 1},
        {"name": "j", "prompt": "hi", "checks": [{"kind": "judge", "rubric": "ok", "model_profile_id": "nope"}]},
    ])
    assert response.status_code == 422
    fields = {p["field"] for p in response.json()["error"]["details"]["problems"]}
    assert {"cases.0.prompt", "cases.0.checks.0.regex.pattern", "cases.0.approvals", "cases.0.history.0.role",
            "cases.0.extra", "cases.1.checks.0.model_profile_id"} <= fields
    assert any(f.startswith("cases.0.checks.1") for f in fields)
    assert not Suite.objects.exists()


def test_a_judge_may_not_name_another_organizations_model_profile(org, owner, agent, api_as, outsider_org,
                                                                  scripted_openai):
    foreign = openai_profile(outsider_org, scripted_openai, label="Theirs")
    response = _create(api_as(owner, org), agent, cases=[
        {**CASE, "checks": [{"kind": "judge", "rubric": "ok", "model_profile_id": str(foreign.pk)}]}])
    assert response.status_code == 422
    assert not Suite.objects.exists()


def test_yaml_export_and_import_round_trip(org, owner, agent, api_as):
    client = api_as(owner, org)
    suite_id = _create(client, agent, cases=[{**CASE, "history": [{"role": "user", "content": "earlier"}],
                                              "attachments": [{"name": "n.txt", "mime": "text/plain",
                                                               "content": "notes"}]}]).json()["id"]
    exported = client.get(f"/api/v1/agents/{agent.pk}/evals/{suite_id}/yaml")
    assert exported.status_code == 200 and exported["Content-Type"].startswith("application/yaml")
    text = exported.content.decode().replace("name: Smoke", "name: Copy")
    assert "kind: eval_suite" in text and "earlier" in text
    imported = client.post(f"/api/v1/agents/{agent.pk}/evals/import", {"yaml": text}, format="json")
    assert imported.status_code == 201, imported.content
    assert imported.json()["name"] == "Copy"
    assert imported.json()["cases"][0]["attachments"][0]["content"] == "notes"
    bad = client.post(f"/api/v1/agents/{agent.pk}/evals/import", {"yaml": "kind: agent\nsurprise: 1\n"},
                      format="json")
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid"
    assert Suite.objects.count() == 2


def test_weaker_roles_read_but_cannot_change_or_run(org, owner, agent, api_as, viewer, member, builder):
    suite_id = _create(api_as(owner, org), agent).json()["id"]
    for user in (viewer, member, builder):  # none owns the agent or holds an edit grant
        client = api_as(user, org)
        assert client.get(f"/api/v1/agents/{agent.pk}/evals/{suite_id}").status_code == 200
        assert _create(client, agent, name="Mine").status_code == 403
        assert client.patch(f"/api/v1/agents/{agent.pk}/evals/{suite_id}", {"name": "x"},
                            format="json").status_code == 403
        assert client.delete(f"/api/v1/agents/{agent.pk}/evals/{suite_id}").status_code == 403
        started = client.post(f"/api/v1/agents/{agent.pk}/evals/runs", {"suite_id": suite_id}, format="json")
        assert started.status_code == 403 and started.json()["error"]["code"] == "forbidden"
    assert Suite.objects.get().name == "Smoke" and Suite.objects.count() == 1
    assert not SuiteRun.objects.exists() and not Run.objects.exists()


def test_outsiders_cannot_read_or_run_another_organizations_suites(org, owner, agent, api_as, outsider,
                                                                   outsider_org, scripted_openai):
    client = api_as(owner, org)
    suite_id = _create(client, agent).json()["id"]
    started = client.post(f"/api/v1/agents/{agent.pk}/evals/runs", {"suite_id": suite_id}, format="json")
    assert started.status_code == 202, started.content
    run_id = started.json()["id"]
    stranger = api_as(outsider, outsider_org)
    paths = [f"/api/v1/agents/{agent.pk}/evals", f"/api/v1/agents/{agent.pk}/evals/{suite_id}",
             f"/api/v1/agents/{agent.pk}/evals/{suite_id}/yaml", f"/api/v1/agents/{agent.pk}/evals/runs",
             f"/api/v1/evals/runs/{run_id}", f"/api/v1/evals/runs/{run_id}/compare?with={run_id}"]
    for path in paths:
        response = stranger.get(path)
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", path
    assert stranger.post(f"/api/v1/agents/{agent.pk}/evals/runs", {"suite_id": suite_id},
                         format="json").status_code == 404
    assert stranger.patch(f"/api/v1/agents/{agent.pk}/evals/{suite_id}", {"name": "x"},
                          format="json").status_code == 404
    assert stranger.delete(f"/api/v1/agents/{agent.pk}/evals/{suite_id}").status_code == 404
    # Naming the other organization's header changes nothing; a foreign suite under one's own agent is 404 too.
    theirs = api_as(outsider, org)
    assert theirs.get(f"/api/v1/evals/runs/{run_id}").status_code == 404
    own_agent, _v, _p = make_agent(outsider_org, outsider, scripted_openai)
    assert stranger.get(f"/api/v1/agents/{own_agent.pk}/evals/{suite_id}").status_code == 404
    assert stranger.post(f"/api/v1/agents/{own_agent.pk}/evals/runs", {"suite_id": suite_id},
                         format="json").status_code == 404
    assert SuiteRun.objects.count() == 1 and Suite.objects.get().name == "Smoke"


def test_a_private_agents_suites_are_hidden_from_members_it_is_not_shared_with(org, owner, builder, api_as,
                                                                               scripted_openai):
    agent, _v, _p = make_agent(org, owner, scripted_openai)
    agent.visibility = "private"
    agent.save(update_fields=["visibility"])
    suite_id = _create(api_as(owner, org), agent).json()["id"]
    client = api_as(builder, org)
    assert client.get(f"/api/v1/agents/{agent.pk}/evals").status_code == 404
    assert client.get(f"/api/v1/agents/{agent.pk}/evals/{suite_id}").status_code == 404


def test_a_run_started_through_the_api_is_listed_detailed_and_compared(org, owner, agent, api_as, scripted_openai,
                                                                       celery_worker):
    client = api_as(owner, org)
    suite_id = _create(client, agent).json()["id"]
    scripted_openai.script("greets", Reply.text("hello"), Reply.text("bye"))
    first = client.post(f"/api/v1/agents/{agent.pk}/evals/runs", {"suite_id": suite_id, "target": "production"},
                        format="json")
    assert first.status_code == 202, first.content
    wait_for(SuiteRun.objects.get(pk=first.json()["id"]))
    second = client.post(f"/api/v1/agents/{agent.pk}/evals/runs", {"suite_id": suite_id}, format="json")
    wait_for(SuiteRun.objects.get(pk=second.json()["id"]))

    listed = client.get(f"/api/v1/agents/{agent.pk}/evals/runs").json()["results"]
    assert [(r["target"], r["status"]) for r in listed] == [("draft", "failed"), ("v1", "passed")]
    detail = client.get(f"/api/v1/evals/runs/{first.json()['id']}").json()
    result = detail["results"][0]
    assert result["status"] == "passed" and result["checks"][0]["passed"] is True
    assert result["transcript_url"] == f"/api/v1/runs/{result['run_id']}"
    assert client.get(result["transcript_url"]).status_code == 200
    compared = client.get(f"/api/v1/evals/runs/{first.json()['id']}/compare?with={second.json()['id']}").json()
    assert compared["changed"] == ["greets"]
    assert client.get(f"/api/v1/evals/runs/{first.json()['id']}/compare").status_code == 422
    assert client.get("/api/v1/evals/runs/not-a-uuid").status_code == 404


def test_the_schema_documents_the_endpoints(api_as, owner, org):
    schema = api_as(owner, org).get("/api/schema/?format=json").json()
    for path in ("/api/v1/agents/{agent_id}/evals", "/api/v1/agents/{agent_id}/evals/runs",
                 "/api/v1/evals/runs/{run_id}", "/api/v1/evals/runs/{run_id}/compare"):
        assert path in schema["paths"], path


def test_replay_checks_round_trip_through_the_suites_yaml(org, owner, agent, api_as, scripted_openai):
    judge = openai_profile(org, scripted_openai, label="Judge")
    checks = [{"kind": "contains", "value": "please"},
              {"kind": "judge", "rubric": "As helpful as the recorded answer.", "model_profile_id": str(judge.pk)}]
    client = api_as(owner, org)
    suite_id = _create(client, agent, replay_checks=checks).json()["id"]
    stored = Suite.objects.get(pk=suite_id).replay_checks

    text = client.get(f"/api/v1/agents/{agent.pk}/evals/{suite_id}/yaml").content.decode()
    assert "replay_checks:" in text and "please" in text
    copy = client.post(f"/api/v1/agents/{agent.pk}/evals/import",
                       {"yaml": text.replace("name: Smoke", "name: Copy")}, format="json")
    assert copy.status_code == 201, copy.content
    assert Suite.objects.get(name="Copy").replay_checks == stored

    # An import over a suite replaces its replay checks too: a document without them leaves none.
    without = text.split("replay_checks:")[0] + "cases:" + text.split("\ncases:", 1)[1]
    replaced = client.post(f"/api/v1/agents/{agent.pk}/evals/import", {"yaml": without, "suite_id": suite_id},
                           format="json")
    assert replaced.status_code == 200, replaced.content
    assert Suite.objects.get(pk=suite_id).replay_checks == []


@pytest.mark.parametrize(("replay_checks", "field"), [
    ("please", "replay_checks"),
    ("[{kind: contains}]", "replay_checks.0.contains.value"),
    ("[{kind: sideways, value: x}]", "replay_checks.0"),
])
def test_a_suites_yaml_with_bad_replay_checks_is_refused_naming_the_field(org, owner, agent, api_as, replay_checks,
                                                                         field):
    document = f"kind: eval_suite\nformat: 1\nname: Bad\nreplay_checks: {replay_checks}\ncases: []\n"
    refused = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/evals/import", {"yaml": document}, format="json")
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "invalid"
    assert field in [p["field"] for p in error["details"]["problems"]], error
    assert not Suite.objects.exists()


def test_a_suites_yaml_whose_judge_names_another_organizations_profile_is_refused(
        org, owner, agent, api_as, outsider_org, scripted_openai):
    foreign = openai_profile(outsider_org, scripted_openai, label="Theirs")
    document = ("kind: eval_suite\nformat: 1\nname: Foreign\ncases: []\nreplay_checks:\n"
                f"  - {{kind: judge, rubric: ok, model_profile_id: '{foreign.pk}'}}\n")
    refused = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/evals/import", {"yaml": document}, format="json")
    assert refused.status_code == 422
    assert [p["field"] for p in refused.json()["error"]["details"]["problems"]] == [
        "replay_checks.0.model_profile_id"]
    assert not Suite.objects.exists()
