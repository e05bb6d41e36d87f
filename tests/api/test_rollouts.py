"""The rollout endpoints: start (guarded by the publish gates), read with metrics, pause, promote, abort; only
who may publish; an outsider's 404 and a weaker role's 403 leave nothing behind; errors in the JSON envelope."""

from __future__ import annotations

import pytest

from agenticos.errors import Invalid
from agenticos.models import AuditEvent
from agents import extensions, rollouts
from agents import services as agents
from agents.models import Environment, Rollout
from tests.api.conftest import actor_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, owner, published_agent):
    """Production on v1, v2 published beside it."""
    actor = actor_of(owner, org)
    agents.update_agent(actor=actor, agent=published_agent,
                        spec={**published_agent.draft_spec, "instructions": "The candidate."})
    agents.publish_agent(actor=actor, agent=published_agent)
    return published_agent


def _base(agent) -> str:
    return f"/api/v1/agents/{agent.pk}/environments/production/rollouts"


def _start(client, agent, **body):
    return client.post(_base(agent), {"candidate_version": 2, "share": 20, **body}, format="json")


def _error(response) -> dict:
    return response.json()["error"]


def test_a_publisher_starts_a_rollout_and_reads_it_with_not_enough_runs_yet(org, admin_user, agent, api_as):
    created = _start(api_as(admin_user, org), agent, min_runs=30, cost_increase_pct=None, reason="try v2")
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["base_version"], body["candidate_version"], body["share"], body["status"]) == (1, 2, 20, "active")
    assert body["min_runs"] == 30 and body["cost_increase_pct"] is None and body["reason"] == "try v2"
    rollout = Rollout.objects.get(pk=body["id"])
    assert Environment.objects.get(agent=agent, name="production").rollout == rollout
    assert AuditEvent.objects.get(action="rollout.started").details["candidate_version"] == 2

    read = api_as(admin_user, org).get(f"{_base(agent)}/{rollout.pk}")
    assert read.status_code == 200
    metrics = read.json()["metrics"]
    assert metrics["base"]["runs"] == metrics["candidate"]["runs"] == 0
    comparison = metrics["comparison"]
    assert comparison["enough_runs"] is False and comparison["note"].startswith("Not enough runs yet")
    assert comparison["test"].startswith("two-proportion z-test") and comparison["p_value"] is None


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"candidate_version": 9}, 404, "not_found"),       # not a published version of this agent
    ({"candidate_version": 1}, 422, None),              # the version production already serves
    ({"share": 0}, 400, None),
    ({"share": 100}, 400, None),
])
def test_a_bad_start_is_refused_and_leaves_no_rollout(org, owner, agent, api_as, body, status, code):
    refused = _start(api_as(owner, org), agent, **body)
    assert refused.status_code == status, refused.content
    if code:
        assert _error(refused)["code"] == code
    assert not Rollout.objects.exists() and not AuditEvent.objects.filter(action__startswith="rollout.").exists()
    assert Environment.objects.get(agent=agent, name="production").rollout_id is None


def test_an_unknown_environment_is_404(org, owner, agent, api_as):
    refused = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/environments/staging/rollouts",
                                      {"candidate_version": 2, "share": 20}, format="json")
    assert refused.status_code == 404 and not Rollout.objects.exists()


def test_one_open_rollout_per_environment(org, owner, agent, api_as):
    client = api_as(owner, org)
    assert _start(client, agent).status_code == 201
    second = _start(client, agent, share=50)
    assert second.status_code == 409 and _error(second)["code"]
    assert Rollout.objects.count() == 1


def test_the_publish_gates_judge_the_candidate_version(org, owner, agent, api_as, monkeypatch):
    judged = []

    def gate(*, actor, agent, version):
        judged.append(version.number if version else None)
        raise Invalid("The candidate fails its suite.", code="evals_failed")

    monkeypatch.setitem(extensions.PUBLISH_GATES, "test-gate", gate)
    refused = _start(api_as(owner, org), agent)
    assert refused.status_code == 422 and _error(refused)["code"] == "evals_failed"
    assert judged == [2] and not Rollout.objects.exists()


def test_the_candidate_is_promoted_as_publishing_promotes(org, owner, agent, api_as):
    client = api_as(owner, org)
    rollout_id = _start(client, agent).json()["id"]
    promoted = client.post(f"{_base(agent)}/{rollout_id}/promote")
    assert promoted.status_code == 200 and promoted.json()["status"] == "promoted"
    env = Environment.objects.select_related("version").get(agent=agent, name="production")
    assert env.version.number == 2 and env.rollout_id is None
    assert AuditEvent.objects.get(action="agent.promoted").details == {
        "environment": "production", "from_version": 1, "to_version": 2}
    assert AuditEvent.objects.filter(action="rollout.promoted").count() == 1
    again = client.post(f"{_base(agent)}/{rollout_id}/abort", {}, format="json")
    assert again.status_code == 409 and Environment.objects.get(pk=env.pk).version.number == 2


def test_pause_resumes_on_a_second_call_and_abort_ends_it(org, owner, agent, api_as):
    client = api_as(owner, org)
    rollout_id = _start(client, agent).json()["id"]
    assert client.post(f"{_base(agent)}/{rollout_id}/pause").json()["status"] == "paused"
    assert client.post(f"{_base(agent)}/{rollout_id}/pause").json()["status"] == "active"
    aborted = client.post(f"{_base(agent)}/{rollout_id}/abort", {"reason": "changed my mind"}, format="json")
    assert aborted.status_code == 200 and aborted.json()["status"] == "aborted"
    assert aborted.json()["reason"] == "changed my mind"
    env = Environment.objects.select_related("version").get(agent=agent, name="production")
    assert env.version.number == 1 and env.rollout_id is None
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="rollout.").order_by("created_at")] == [
        "rollout.started", "rollout.paused", "rollout.resumed", "rollout.aborted"]


def _every_endpoint(agent, rollout_id):
    base = _base(agent)
    return [("post", base), ("get", f"{base}/{rollout_id}"), ("post", f"{base}/{rollout_id}/pause"),
            ("post", f"{base}/{rollout_id}/advance"), ("post", f"{base}/{rollout_id}/promote"),
            ("post", f"{base}/{rollout_id}/abort")]


def _started(org, owner, agent) -> Rollout:
    return rollouts.start_rollout(actor=actor_of(owner, org), agent=agent, environment="production", candidate=2,
                                  share=20)


@pytest.mark.parametrize("role", ["member", "viewer", "builder"])  # a builder publishes only what they may
def test_a_role_that_may_not_publish_gets_403_and_changes_nothing(org, owner, agent, api_as, role, request):
    rollout = _started(org, owner, agent)
    client = api_as(request.getfixturevalue(role), org)
    for method, url in _every_endpoint(agent, rollout.pk):
        response = getattr(client, method)(url, {"candidate_version": 2, "share": 20}, format="json")
        assert response.status_code == 403, (url, response.content)
        assert set(_error(response)) == {"code", "message", "details"}
    rollout.refresh_from_db()
    assert rollout.status == "active" and Rollout.objects.count() == 1
    assert Environment.objects.get(agent=agent, name="production").version.number == 1


def test_an_outsider_gets_404_for_every_endpoint_and_changes_nothing(org, owner, agent, api_as, outsider,
                                                                    outsider_org):
    rollout = _started(org, owner, agent)
    # Whether the outsider names their own organization or this one (not theirs), the rollout is not there.
    for client in (api_as(outsider, outsider_org), api_as(outsider, org)):
        for method, url in _every_endpoint(agent, rollout.pk):
            response = getattr(client, method)(url, {"candidate_version": 2, "share": 20}, format="json")
            assert response.status_code == 404, (url, response.content)
            assert set(_error(response)) == {"code", "message", "details"}
    outsider_client = api_as(outsider, outsider_org)
    for method, url in _every_endpoint(agent, rollout.pk):
        assert getattr(outsider_client, method)(url, {}, format="json").status_code == 404
    rollout.refresh_from_db()
    assert rollout.status == "active" and Rollout.objects.count() == 1


def test_a_rollout_is_read_only_under_its_own_agent_and_environment(org, owner, agent, api_as, demo_profile):
    rollout = _started(org, owner, agent)
    other = agents.create_agent(actor=actor_of(owner, org), spec={"name": "Other", "instructions": "x",
                                                                  "model_profile_id": str(demo_profile.pk)})
    agents.publish_agent(actor=actor_of(owner, org), agent=other)
    client = api_as(owner, org)
    assert client.get(f"/api/v1/agents/{other.pk}/environments/production/rollouts/{rollout.pk}").status_code == 404
    assert client.get(f"/api/v1/agents/{agent.pk}/environments/dev/rollouts/{rollout.pk}").status_code == 404
    assert client.post(f"/api/v1/agents/{other.pk}/environments/production/rollouts/{rollout.pk}/abort",
                       {}, format="json").status_code == 404
    rollout.refresh_from_db()
    assert rollout.status == "active"


def test_the_failure_rate_test_is_a_two_proportion_z_test():
    z, p = rollouts.two_proportion_z_test(10, 100, 20, 100)
    # pooled 0.15, standard error sqrt(0.15 · 0.85 · 2/100) = 0.0505: z = 1.98, two-sided p = 0.0477
    assert round(z, 2) == 1.98 and round(p, 4) == 0.0477
    assert rollouts.two_proportion_z_test(0, 50, 0, 50) is None
    assert rollouts.two_proportion_z_test(1, 0, 1, 5) is None


def _measured(base_runs, base_failed, base_cost, cand_runs, cand_failed, cand_cost):
    def side(runs, failed, cost):
        return {**rollouts.EMPTY, "runs": runs, "failed": failed, "failed_share": failed / runs if runs else None,
                "cost_per_run_usd": cost}
    return {"base": side(base_runs, base_failed, base_cost), "candidate": side(cand_runs, cand_failed, cand_cost)}


def test_the_thresholds_need_enough_runs_and_name_what_was_crossed(org, owner, agent):
    rollout = _started(org, owner, agent)  # defaults: 2× failures, 20 runs, +50 % cost
    assert rollouts.crossed_threshold(rollout, _measured(40, 2, "0.01", 19, 19, "0.01")) == ""
    assert rollouts.crossed_threshold(rollout, _measured(40, 4, "0.01", 20, 3, "0.01")) == ""  # 15 % < 2 × 10 %
    assert "failed 4 of 20 runs" in rollouts.crossed_threshold(rollout, _measured(40, 4, "0.01", 20, 4, "0.01"))
    assert rollouts.crossed_threshold(rollout, _measured(40, 0, "0.0100", 20, 0, "0.0150")) == ""  # +50 %: not above
    assert "more than 50 %" in rollouts.crossed_threshold(rollout, _measured(40, 0, "0.0100", 20, 0, "0.0151"))
    rollout.cost_increase_pct = None
    assert rollouts.crossed_threshold(rollout, _measured(40, 0, "0.0100", 20, 0, "0.0500")) == ""


def test_steps_are_set_at_the_start_and_advanced_by_hand_through_the_api(org, admin_user, agent, api_as):
    client = api_as(admin_user, org)
    created = _start(client, agent, share=5, steps=[25, 100], step_minutes=60)
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["steps"] == [25, 100] and body["step_minutes"] == 60
    assert body["metrics"]["next_step"] == {"share": 25, "scheduled": True,
                                            "waiting_for": body["metrics"]["next_step"]["waiting_for"]}
    assert body["metrics"]["next_step"]["waiting_for"].startswith("The next step (25 %) is due at")
    url = f"{_base(agent)}/{body['id']}/advance"
    backwards = client.post(url, {"share": 3}, format="json")
    assert backwards.status_code == 422 and _error(backwards)["details"]["field"] == "share"
    moved = client.post(url, {}, format="json")
    assert moved.status_code == 200 and moved.json()["share"] == 25
    assert moved.json()["metrics"]["next_step"]["share"] == 100
    promoted = client.post(url, {}, format="json")
    assert promoted.status_code == 200 and promoted.json()["status"] == "promoted"
    assert Environment.objects.get(agent=agent, name="production").version.number == 2
    assert client.post(url, {}, format="json").status_code == 409


def test_steps_that_go_down_are_refused_in_the_envelope(org, admin_user, agent, api_as):
    refused = _start(api_as(admin_user, org), agent, share=30, steps=[20])
    assert refused.status_code == 422 and _error(refused)["details"]["field"] == "steps"
    assert not Rollout.objects.exists()
