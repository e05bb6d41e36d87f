"""The replay gate and the replays' verdicts, through the real runner and the scripted OpenAI-compatible fake:
publishing (and a rollout's start, on its candidate) replays the agent's newest recorded runs and refuses,
naming each failing run, when they fail the gate suite's replay checks; a judge check gives the verdict through
the metered path; runs are picked by their 👎."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from django.urls import reverse

from agenticos.errors import Invalid
from agenticos.models import AuditEvent
from agents import rollouts
from agents import services as agent_services
from agents.models import AgentVersion, Conversation, Feedback, Message, Rollout, Run
from agents.runner import execute
from agents.runs import start_run
from evals import replay_gate, replays
from evals.models import ReplayGate, ReplaySet
from governance import grants
from governance.models import SpendEntry
from tests.evals.conftest import judge_says, make_agent, openai_profile, suite_with
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of

# Transactional only where a test asks for the worker (celery_worker brings transactional_db): the rest run in a
# rolled-back transaction, and a suite run they start is never handed to a worker (its on_commit never fires).
pytestmark = pytest.mark.django_db


def _recorded_run(org, owner, agent, version, prompt: str = "Say hi.") -> Run:
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="t")
    run = start_run(agent=agent, version=version, surface="web", prompt=prompt, user=owner, acting_role="owner",
                    conversation=conversation, enqueue=False)
    execute(run.pk)
    run.refresh_from_db()
    assert run.status == "completed", run.error
    return run


def _edit_draft(org, owner, agent, instructions: str) -> None:
    agent.refresh_from_db()
    agent_services.update_agent(actor=actor_of(owner, org), agent=agent,
                                spec={**agent.draft_spec, "instructions": instructions})


def _gated_agent(org, owner, server, runs: int = 2):
    """An agent (v1) with `runs` recorded runs answered politely, and a replay gate on a suite that wants
    "please" in every answer."""
    agent, version, _profile = make_agent(org, owner, server, instructions="[case:orig] Be polite.")
    for _ in range(runs):
        server.script("orig", Reply.text("Hello, please sit down."))
    recorded = [_recorded_run(org, owner, agent, version) for _ in range(runs)]
    suite = suite_with(org, owner, agent, cases=[], replay_checks=[{"kind": "contains", "value": "please"}])
    replay_gate.set_gate(actor=actor_of(owner, org), agent=agent, data={"runs": runs, "suite_id": str(suite.pk)})
    return agent, version, recorded


def test_publishing_is_refused_naming_each_replayed_run_that_fails_the_gate_and_passes_once_they_pass(
        org, owner, scripted_openai, celery_worker):
    agent, _v1, recorded = _gated_agent(org, owner, scripted_openai)
    _edit_draft(org, owner, agent, "[case:rude] Be rude.")
    scripted_openai.script("rude", Reply.text("Go away."), Reply.text("Go away."))
    actor = actor_of(owner, org)

    with pytest.raises(Invalid) as refused:
        agent_services.publish_agent(actor=actor, agent=agent)

    assert refused.value.code == "replay_failed"
    assert refused.value.message == "The agent cannot be published: 2 of 2 replayed runs failed its replay gate."
    problems = refused.value.details["problems"]
    assert sorted(p["field"] for p in problems) == sorted(f"replays.{run.pk}" for run in recorded)
    assert all("does not contain 'please'" in p["message"] for p in problems)
    assert AgentVersion.objects.filter(agent=agent, number__gt=1).count() == 0  # nothing was published
    gate_set = ReplaySet.objects.get(pk=refused.value.details["replay_set"])
    assert gate_set.purpose == "publish_gate" and gate_set.target == "draft"
    assert (gate_set.passed, gate_set.failed) == (0, 2)
    assert {r.verdict for r in gate_set.results.all()} == {"failed"}
    gate = ReplayGate.objects.get(agent=agent)
    assert (gate.last_outcome, gate.last_target, gate.last_replay_set_id) == ("refused", "draft", gate_set.pk)
    assert gate.last_message == refused.value.message

    _edit_draft(org, owner, agent, "[case:kind] Be kind.")
    scripted_openai.script("kind", Reply.text("Yes, please."), Reply.text("Of course, please go on."))
    published = agent_services.publish_agent(actor=actor, agent=agent)

    assert published.number == 2
    passed = AuditEvent.objects.get(action="replay_gate.passed")
    assert passed.details["failed"] == 0 and passed.details["runs"] == 2
    gate.refresh_from_db()
    assert (gate.last_outcome, gate.last_message) == ("passed", "2 of 2 replayed runs passed.")


def test_max_failed_lets_a_gate_pass_with_that_many_failing_runs(org, owner, scripted_openai, celery_worker):
    agent, _v1, _recorded = _gated_agent(org, owner, scripted_openai)
    ReplayGate.objects.filter(agent=agent).update(max_failed=1)
    _edit_draft(org, owner, agent, "[case:mixed] Sometimes polite.")
    scripted_openai.script("mixed", Reply.text("Go away."), Reply.text("Yes, please."))

    assert agent_services.publish_agent(actor=actor_of(owner, org), agent=agent).number == 2


def test_a_rollout_starts_only_when_its_candidate_passes_the_replay_gate(org, owner, scripted_openai, celery_worker):
    agent, v1, _recorded = _gated_agent(org, owner, scripted_openai, runs=1)
    ReplayGate.objects.filter(agent=agent).delete()  # v2 is published without the gate
    _edit_draft(org, owner, agent, "[case:cand] Be curt.")
    agent_services.publish_agent(actor=actor_of(owner, org), agent=agent)
    suite = agent.eval_suites.get()
    replay_gate.set_gate(actor=actor_of(owner, org), agent=agent, data={"runs": 1, "suite_id": str(suite.pk)})
    scripted_openai.script("cand", Reply.text("No."))
    actor = actor_of(owner, org)

    with pytest.raises(Invalid) as refused:
        rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=10)

    assert refused.value.code == "replay_failed" and "cannot be rolled out" in refused.value.message
    assert not Rollout.objects.exists()
    assert ReplaySet.objects.get(pk=refused.value.details["replay_set"]).target == "v2"

    scripted_openai.script("cand", Reply.text("Fine, please."))
    started = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=10)
    assert started.status == Rollout.Status.ACTIVE and started.base_id == v1.pk


def test_an_agent_without_recorded_traffic_is_published_through_its_replay_gate(org, owner, scripted_openai):
    agent, _v1, _profile = make_agent(org, owner, scripted_openai)
    replay_gate.set_gate(actor=actor_of(owner, org), agent=agent, data={"runs": 10})
    _edit_draft(org, owner, agent, "Changed.")

    assert agent_services.publish_agent(actor=actor_of(owner, org), agent=agent).number == 2
    assert not ReplaySet.objects.exists()
    # Let through, and said so: on the gate (the Replays tab, GET …/replay-gate) and in the audit log.
    gate = ReplayGate.objects.get(agent=agent)
    assert gate.last_outcome == "skipped" and "No recorded run to replay yet" in gate.last_message
    assert AuditEvent.objects.get(action="replay_gate.skipped").details == {"target": "draft",
                                                                           "reason": "no_recorded_runs"}


def test_a_publisher_who_may_not_read_the_gates_runs_is_refused_instead_of_replaying_only_their_own(
        org, owner, builder, scripted_openai, api_as):
    """The gate's runs do not depend on who publishes: a builder with publish access but without runs:view is
    refused when the gate's window holds other people's runs — not let through with nothing replayed."""
    agent, version, _profile = make_agent(org, owner, scripted_openai)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="t")
    for index in range(2):
        Run.objects.create(organization=org, agent=agent, version=version, surface="web", user=owner,
                           conversation=conversation, prompt=f"p{index}", output="o", status="completed")
    replay_gate.set_gate(actor=actor_of(owner, org), agent=agent, data={"runs": 5})
    grants.share_agent(actor=actor_of(owner, org), agent=agent, user_id=builder.pk, level="publish")
    _edit_draft(org, owner, agent, "Changed.")

    refused = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/publish", {}, format="json")

    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "replay_gate_unreadable" and "2 of them other people's" in error["message"]
    assert error["details"] == {"unreadable_runs": 2}
    assert not AgentVersion.objects.filter(agent=agent, number__gt=1).exists() and not ReplaySet.objects.exists()
    assert ReplayGate.objects.get(agent=agent).last_outcome == "refused"


def _console(user, org) -> Client:
    from agenticos.tenancy import SESSION_KEY

    client = Client()
    client.force_login(user)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    return client


def test_a_refused_publish_is_the_apis_error_envelope_and_the_console_opens_the_gates_replay(
        org, owner, scripted_openai, celery_worker, api_as):
    agent, _v1, recorded = _gated_agent(org, owner, scripted_openai, runs=1)
    _edit_draft(org, owner, agent, "[case:rude] Be rude.")
    scripted_openai.script("rude", Reply.text("Go away."), Reply.text("Go away."))

    refused = api_as(owner, org).post(f"/api/v1/agents/{agent.pk}/publish", {"note": "try"}, format="json")

    assert refused.status_code == 422
    error = refused.json()["error"]
    replay_id = error["details"]["replay_set"]
    assert error["code"] == "replay_failed"
    assert error["message"] == "The agent cannot be published: 1 of 1 replayed runs failed its replay gate."
    why = f"run {str(recorded[0].pk)[:8]}: The answer does not contain 'please'."
    assert error["details"]["problems"] == [{"field": f"replays.{recorded[0].pk}", "message": why}]
    assert (error["details"]["runs"], error["details"]["failed"], error["details"]["max_failed"]) == (1, 1, 0)
    read = api_as(owner, org).get(error["details"]["replay_url"])
    assert read.status_code == 200 and read.json()["results"][0]["replayed_output"] == "Go away."
    gate = api_as(owner, org).get(f"/api/v1/agents/{agent.pk}/replay-gate").json()
    assert (gate["last_outcome"], gate["last_replay_set_id"]) == ("refused", replay_id)

    # In the console the person lands on the gate's replay, run by run, with the refusal above it.
    client = _console(owner, org)
    published = client.post(f"/agents/{agent.pk}/publish", {"note": "again"})
    second = ReplaySet.objects.exclude(pk=replay_id).get()
    assert published.status_code == 302 and published["Location"] == f"/agents/{agent.pk}/replays/{second.pk}/"
    page = client.get(published["Location"]).content.decode()
    assert "The agent cannot be published: 1 of 1 replayed runs failed its replay gate." in page
    assert "data-publish-gate" in page and "Go away." in page and 'data-verdict="failed"' in page
    tab = client.get(f"/agents/{agent.pk}/replays/").content.decode()
    assert 'data-replay-gate-last="refused"' in tab and f"/agents/{agent.pk}/replays/{second.pk}/" in tab
    assert not AgentVersion.objects.filter(agent=agent, number__gt=1).exists()


def _wait(replay_set: ReplaySet, timeout: float = 90.0) -> ReplaySet:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replay_set.refresh_from_db()
        if replay_set.is_finished:
            return replay_set
        time.sleep(0.2)
    raise AssertionError(f"replay still {replay_set.status} after {timeout} s")


def test_a_judge_check_gives_each_replayed_run_its_verdict_through_the_metered_path(
        org, owner, scripted_openai, celery_worker):
    agent, version, _profile = make_agent(org, owner, scripted_openai, instructions="[case:orig] Be brief.")
    scripted_openai.script("orig", Reply.text("Hello."), Reply.text("Hello again."))
    first, second = _recorded_run(org, owner, agent, version), _recorded_run(org, owner, agent, version, "Bye.")
    judge = openai_profile(org, scripted_openai, label="Judge")
    suite = suite_with(org, owner, agent, cases=[], replay_checks=[
        {"kind": "judge", "rubric": "As helpful as the recorded answer.", "model_profile_id": str(judge.pk)}])
    _edit_draft(org, owner, agent, "[case:draft] Be brief.")
    scripted_openai.script("draft", Reply.text("Hi [case:good]"), Reply.text("Hi [case:bad]"))
    scripted_openai.script("judge:good", judge_says(True, "Just as helpful."))
    scripted_openai.script("judge:bad", judge_says(False, "Worse than the recording."))

    replay_set = _wait(replays.start_replay(actor=actor_of(owner, org), agent=agent, data={
        "target": "draft", "suite_id": str(suite.pk), "selection": {"run_ids": [str(first.pk), str(second.pk)]}}))

    assert replay_set.status == ReplaySet.Status.COMPLETED, replay_set.error
    verdicts = {r.replayed_output: (r.verdict, r.checks[0]["reason"]) for r in replay_set.results.all()}
    assert verdicts == {"Hi [case:good]": ("passed", "Just as helpful."),
                        "Hi [case:bad]": ("failed", "Worse than the recording.")}
    assert (replay_set.passed, replay_set.failed) == (1, 1)
    # The judge read the recorded answer as its reference, and its spend is in the ledger as the judge's.
    judged = str(scripted_openai.requests_for("judge:good") + scripted_openai.requests_for("judge:bad"))
    assert "The recorded answer to compare with: Hello" in judged
    judge_spend = SpendEntry.objects.filter(kind="eval_judge", agent=agent)
    assert judge_spend.count() == 2
    assert sum(e.cost_usd for e in judge_spend) == replay_set.judge_cost_usd


def _rate(run: Run, user, rating: str) -> None:
    message = Message.objects.create(conversation=run.conversation, run=run, role="assistant", content=run.output)
    Feedback.objects.create(organization=run.organization, agent=run.agent, message=message, run=run, user=user,
                            rating=rating)


def test_runs_are_picked_by_their_thumbs_down_and_the_newest_n(org, owner, member, scripted_openai):
    agent, version, _profile = make_agent(org, owner, scripted_openai)
    runs = []
    for index in range(4):
        conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title=str(index))
        runs.append(Run.objects.create(organization=org, agent=agent, version=version, surface="web", user=owner,
                                       conversation=conversation, prompt=f"p{index}", output="o",
                                       status="completed"))
    oldest, older, newer, newest = runs  # created in this order
    _rate(older, owner, "down")
    _rate(newest, owner, "up")
    actor = actor_of(owner, org)

    assert [r.pk for r in replays.select_runs(actor, agent, {"feedback": "down"})[0]] == [older.pk]
    assert [r.pk for r in replays.select_runs(actor, agent, {"feedback": "up"})[0]] == [newest.pk]
    assert [r.pk for r in replays.select_runs(actor, agent, {"feedback": "rated"})[0]] == [older.pk, newest.pk]
    assert [r.pk for r in replays.select_runs(actor, agent, {"feedback": "down_first", "last": 2})[0]] == [
        older.pk, newest.pk]
    assert [r.pk for r in replays.select_runs(actor, agent, {"last": 2})[0]] == [newest.pk, newer.pk]
    with pytest.raises(Invalid) as bad:
        replays.select_runs(actor, agent, {"feedback": "sideways", "last": 0})
    assert {p["field"] for p in bad.value.details["problems"]} == {"feedback", "last"}


def test_the_replay_gate_endpoint_sets_reads_and_removes_it_and_refuses_others(
        org, owner, viewer, outsider, outsider_org, scripted_openai, api_as):
    agent, _v1, _profile = make_agent(org, owner, scripted_openai)
    url = reverse("api-agent-replay-gate", kwargs={"agent_id": agent.pk})
    client = api_as(owner, org)
    assert client.get(url).status_code == 404  # none yet

    assert api_as(viewer, org).put(url, {"runs": 5}, format="json").status_code == 403
    assert api_as(outsider, outsider_org).put(url, {"runs": 5}, format="json").status_code == 404
    assert not ReplayGate.objects.exists()  # the refusals wrote nothing

    put = client.put(url, {"runs": 5, "surface": "api", "max_failed": 1, "cap_usd": "2"}, format="json")
    assert put.status_code == 200, put.json()
    assert client.get(url).json() | {"updated_at": None} == {
        "agent_id": str(agent.pk), "runs": 5, "surface": "api", "suite_id": None, "on_mismatch": "refuse",
        "cap_usd": "2.00000000", "max_failed": 1, "updated_by": owner.email, "updated_at": None,
        "last_outcome": "", "last_target": "", "last_message": "", "last_replay_set_id": None,
        "last_checked_at": None}
    assert api_as(viewer, org).get(url).status_code == 200
    assert api_as(outsider, outsider_org).get(url).status_code == 404
    bad = client.put(url, {"runs": 0, "surface": "nowhere"}, format="json")
    assert bad.status_code == 400 and "error" in bad.json()
    assert api_as(viewer, org).delete(url).status_code == 403
    assert client.delete(url).status_code == 204 and not ReplayGate.objects.exists()
