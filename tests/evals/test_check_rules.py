"""The checks' own rules: a hostile regex cannot hold a worker, hostile case fields are refused, a draft that
would not publish is not evaluated."""

from __future__ import annotations

import pytest

from agenticos.errors import Invalid
from agents import services as agent_services
from agents.models import AgentVersion
from evals.checks import REGEX_TIMEOUT_SECONDS, CaseOutcome, Check
from evals.models import SuiteRun
from tests.evals.conftest import make_agent, openai_profile, suite_with
from tests.runner.conftest import actor_of


def test_a_catastrophic_regex_gives_up_within_its_timeout_and_fails_the_check():
    check = Check(0, {"kind": "regex", "pattern": r"(a|aa)+$", "ignore_case": False})
    passed, reason = Check._regex(CaseOutcome(run_id=None, status="completed", output="a" * 60 + "b"), check.spec)
    assert passed is False and f"{REGEX_TIMEOUT_SECONDS:g} s" in reason


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["../../etc/passwd", ".env", "a/b.txt", ""])
def test_an_attachment_name_that_is_a_path_is_refused(org, owner, scripted_openai, name):
    agent, _v, _p = make_agent(org, owner, scripted_openai)
    with pytest.raises(Invalid) as refused:
        suite_with(org, owner, agent, [{"name": "c", "prompt": "hi", "attachments": [
            {"name": name, "mime": "text/plain", "content": "x"}]}])
    assert "cases.0.attachments.0.name" in {p["field"] for p in refused.value.details["problems"]}


@pytest.mark.django_db
def test_a_draft_that_would_not_publish_is_not_evaluated(org, owner, scripted_openai, outsider_org, api_as):
    agent, _v, _p = make_agent(org, owner, scripted_openai)
    suite = suite_with(org, owner, agent, [{"name": "c", "prompt": "hi"}])
    foreign = openai_profile(outsider_org, scripted_openai, label="Theirs")
    agent.refresh_from_db()
    agent_services.update_agent(actor=actor_of(owner, org), agent=agent,
                                spec={**agent.draft_spec, "model_profile_id": str(foreign.pk)})
    response = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/evals/runs", {"suite_id": str(suite.pk)},
                                       format="json")
    assert response.status_code == 422, response.content
    assert "model_profile_id" in {p["field"] for p in response.json()["error"]["details"]["problems"]}
    assert not AgentVersion.objects.filter(agent=agent, number=0).exists() and not SuiteRun.objects.exists()


@pytest.mark.django_db
def test_a_suite_run_whose_driver_was_lost_is_swept_to_error(org, owner, scripted_openai, settings):
    from datetime import timedelta

    from django.utils import timezone

    from evals import driver, services
    from evals.models import CaseResult

    agent, _v, _p = make_agent(org, owner, scripted_openai)
    suite = suite_with(org, owner, agent, [{"name": "c", "prompt": "hi"}, {"name": "d", "prompt": "yo"}])
    suite_run = services.start_suite_run(actor=actor_of(owner, org), suite=suite, target="1")
    SuiteRun.objects.filter(pk=suite_run.pk).update(status=SuiteRun.Status.RUNNING, started_at=timezone.now())
    now = timezone.now()
    assert driver.sweep_stale(now) == 0  # still within what its cases could take
    later = now + timedelta(seconds=3 * settings.EVAL_CASE_TIMEOUT_SECONDS + 1)
    assert driver.sweep_stale(later) == 1
    suite_run.refresh_from_db()
    assert suite_run.status == SuiteRun.Status.ERROR and "worker was lost" in suite_run.error
    assert set(suite_run.results.values_list("status", flat=True)) == {CaseResult.Status.ERROR}
