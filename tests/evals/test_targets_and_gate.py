"""A suite on the draft runs a frozen snapshot of the draft and never touches the published version or its
environments; two runs compare; the publish gate runs the suite on the draft and refuses naming the case."""

from __future__ import annotations

import json

import pytest

from agents import services as agent_services
from agents.models import AgentVersion, Environment, Run
from evals.models import SuiteRun
from evals.services import compare_runs
from tests.evals.conftest import make_agent, run_suite, suite_with
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db(transaction=True)


def _edit_draft(org, user, agent, **changes):
    actor = actor_of(user, org)
    agent.refresh_from_db()
    return agent_services.update_agent(actor=actor, agent=agent, spec={**agent.draft_spec, **changes})


def _system_prompts(server) -> list[str]:
    return [json.dumps([m for m in r.json["messages"] if m["role"] == "system"]) for r in server.chat_requests]


def test_a_draft_run_never_touches_the_published_version_and_two_runs_compare(org, owner, scripted_openai,
                                                                             celery_worker):
    agent, v1, _profile = make_agent(org, owner, scripted_openai, instructions="PUBLISHED-RULES")
    _edit_draft(org, owner, agent, instructions="DRAFT-RULES")
    environments = dict(Environment.objects.filter(agent=agent).values_list("name", "version_id"))
    suite = suite_with(org, owner, agent, [
        {"name": "greets", "prompt": "[case:greets] hi", "checks": [{"kind": "contains", "value": "hello"}]},
    ])
    scripted_openai.script("greets", Reply.text("hello from the draft"), Reply.text("good day from v1"))

    on_draft = run_suite(org, owner, suite, target="draft")
    on_v1 = run_suite(org, owner, suite, target="1")

    draft_run = Run.objects.select_related("version").get(pk=on_draft.results.get().run_id)
    assert on_draft.target == "draft" and draft_run.version.number == 0 and draft_run.version_id != v1.pk
    prompts = _system_prompts(scripted_openai)
    assert "DRAFT-RULES" in prompts[0] and "PUBLISHED-RULES" not in prompts[0]
    assert "PUBLISHED-RULES" in prompts[1]
    # The environments still point where they did; the snapshot is no version anyone can list or publish over.
    assert dict(Environment.objects.filter(agent=agent).values_list("name", "version_id")) == environments
    assert list(AgentVersion.objects.filter(agent=agent, number__gt=0).values_list("number", flat=True)) == [1]
    assert agent_services.publish_agent(actor=actor_of(owner, org), agent=agent).number == 2

    assert (on_draft.status, on_v1.status) == (SuiteRun.Status.PASSED, SuiteRun.Status.FAILED)
    compared = compare_runs(actor=actor_of(owner, org), first=on_draft, second=on_v1)
    assert compared["changed"] == ["greets"]
    case = compared["cases"][0]
    assert (case["first"], case["second"]) == ("passed", "failed")
    assert case["checks_flipped"] == [{"index": 0, "label": "contains 'hello'", "first": True, "second": False}]
    assert case["duration_delta_ms"] is not None and compared["cost_delta_usd"] is not None


def test_the_publish_gate_refuses_naming_the_failing_case_and_publishes_once_it_passes(org, owner, scripted_openai,
                                                                                     celery_worker, api_as):
    agent, v1, _profile = make_agent(org, owner, scripted_openai)
    _edit_draft(org, owner, agent, instructions="Now rude.")
    suite_with(org, owner, agent, gates_publish=True, cases=[
        {"name": "polite", "prompt": "[case:polite] hi", "checks": [{"kind": "contains", "value": "please"}]},
        {"name": "short", "prompt": "[case:short] hi", "checks": [{"kind": "max_steps", "steps": 3}]},
    ])
    scripted_openai.script("polite", Reply.text("go away"), Reply.text("yes please"))
    scripted_openai.script("short", Reply.text("ok"), Reply.text("ok"))
    client = api_as(owner, org)

    refused = client.post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")

    assert refused.status_code == 422, refused.content
    error = refused.json()["error"]
    assert error["code"] == "evals_failed" and "polite" in error["message"] and "short" not in error["message"]
    assert [p["field"] for p in error["details"]["problems"]] == ["evals.Smoke.polite"]
    assert "does not contain 'please'" in error["details"]["problems"][0]["message"]
    # Nothing was published and no environment moved.
    assert list(AgentVersion.objects.filter(agent=agent, number__gt=0).values_list("number", flat=True)) == [1]
    assert set(Environment.objects.filter(agent=agent).values_list("version_id", flat=True)) == {v1.pk}
    gate_run = SuiteRun.objects.get(pk=error["details"]["suite_runs"][0])
    assert gate_run.purpose == SuiteRun.Purpose.PUBLISH_GATE and gate_run.target == "draft"

    published = client.post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")

    assert published.status_code == 201, published.content
    assert published.json()["number"] == 2
