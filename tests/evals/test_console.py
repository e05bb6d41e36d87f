"""Builder → Evaluations: the tab, suites and cases written with the form, a run's progress and results, the diff;
a viewer reads but cannot change, an outsider gets a 404."""

from __future__ import annotations

import pytest
from django.test import Client

from agenticos.tenancy import SESSION_KEY
from evals import services
from evals.models import Case, Suite, SuiteRun
from tests.evals.conftest import make_agent, openai_profile
from tests.runner.conftest import actor_of

# Transactional only where a test asks for the worker (celery_worker brings transactional_db): the rest run in a
# rolled-back transaction, and a suite run they start is never handed to a worker (its on_commit never fires).
pytestmark = pytest.mark.django_db


def _client(user, org) -> Client:
    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    return client


@pytest.fixture
def agent(org, owner, scripted_openai):
    return make_agent(org, owner, scripted_openai)[0]


def test_an_editor_writes_a_suite_and_a_case_with_the_form(org, owner, agent, scripted_openai):
    judge = openai_profile(org, scripted_openai, label="Judge")
    client = _client(owner, org)
    assert 'data-evals-tab' in client.get(f"/agents/{agent.pk}/").content.decode()
    created = client.post(f"/agents/{agent.pk}/evals/", {"name": "Smoke", "gates_publish": "on"})
    assert created.status_code == 302
    suite = Suite.objects.get(agent=agent)
    assert suite.gates_publish is True

    added = client.post(f"/agents/{agent.pk}/evals/{suite.pk}/add-case", {
        "name": "greets", "prompt": "Say hello", "history_user": "Earlier question",
        "check_0_kind": "contains", "check_0_value": "hello",
        "check_1_kind": "tool_called", "check_1_value": "create_chart", "check_1_args": '{"chart_type": "bar"}',
        "check_2_kind": "judge", "check_2_value": "Is polite", "check_2_profile": str(judge.pk),
        "approvals": "send_email = approve", "default_approval": "reject", "answers": "Plan = Pro, Team",
    })
    assert added.status_code == 302, added.content.decode()[:500]
    case = Case.objects.get(suite=suite)
    assert [c["kind"] for c in case.checks] == ["contains", "tool_called", "judge"]
    assert case.checks[1]["args"] == {"chart_type": "bar"} and case.checks[2]["model_profile_id"] == str(judge.pk)
    assert case.history == [{"role": "user", "content": "Earlier question"}]
    assert case.approvals == {"send_email": "approve"} and case.answers == {"Plan": ["Pro", "Team"]}
    page = client.get(f"/agents/{agent.pk}/evals/?suite={suite.pk}").content.decode()
    assert 'data-case-row="greets"' in page and "contains &#x27;hello&#x27;" in page

    refused = client.post(f"/agents/{agent.pk}/evals/{suite.pk}/add-case", {
        "name": "bad", "prompt": "x", "check_0_kind": "regex", "check_0_value": "("})
    assert refused.status_code == 422 and Case.objects.filter(suite=suite).count() == 1


def test_a_run_shows_its_progress_and_two_runs_diff(org, owner, agent):
    suite = services.create_suite(actor=actor_of(owner, org), agent=agent, data={"name": "Smoke", "cases": [
        {"name": "greets", "prompt": "hi", "checks": [{"kind": "contains", "value": "hello"}]}]})
    client = _client(owner, org)
    started = client.post(f"/agents/{agent.pk}/evals/{suite.pk}/run", {"target": "draft"})
    assert started.status_code == 302
    first = SuiteRun.objects.get()
    page = client.get(started["Location"]).content.decode()
    assert 'data-refresh-every="2"' in page and "0 of 1 cases done" in page  # queued: no worker in this test
    partial = client.get(started["Location"], HTTP_X_FRAGMENT="true").content.decode()
    assert partial.lstrip().startswith("<div data-eval-results")
    second = services.start_suite_run(actor=actor_of(owner, org), suite=suite, target="1")
    diff = client.get(f"/agents/{agent.pk}/evals/compare?first={first.pk}&second={second.pk}")
    assert diff.status_code == 200 and 'data-diff-row="greets"' in diff.content.decode()


def test_a_viewer_reads_but_cannot_change_and_an_outsider_sees_nothing(org, owner, agent, viewer, outsider,
                                                                      outsider_org):
    suite = services.create_suite(actor=actor_of(owner, org), agent=agent, data={"name": "Smoke", "cases": [
        {"name": "greets", "prompt": "hi", "checks": []}]})
    looker = _client(viewer, org)
    page = looker.get(f"/agents/{agent.pk}/evals/")
    assert page.status_code == 200 and "data-case-form" not in page.content.decode()
    assert looker.post(f"/agents/{agent.pk}/evals/{suite.pk}/add-case", {"name": "x", "prompt": "y"}).status_code == 403
    assert looker.post(f"/agents/{agent.pk}/evals/{suite.pk}/run", {"target": "draft"}).status_code == 403
    assert looker.post(f"/agents/{agent.pk}/evals/", {"name": "Mine"}).status_code == 403
    stranger = _client(outsider, outsider_org)
    assert stranger.get(f"/agents/{agent.pk}/evals/").status_code == 404
    assert stranger.post(f"/agents/{agent.pk}/evals/{suite.pk}/delete").status_code == 404
    assert Suite.objects.count() == 1 and Case.objects.count() == 1 and not SuiteRun.objects.exists()
