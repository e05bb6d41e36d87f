"""Rollouts through the real admission and runner: the share lands where it should, a conversation keeps its
version across turns, and a failing candidate is rolled back by itself (audit event, owner's notification)."""

from __future__ import annotations

import math

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models.function import FunctionModel

from agenticos.models import AuditEvent
from agents import rollouts
from agents import services as agent_services
from agents.chat import start_member_run
from agents.models import Environment, ModelProfile, Rollout, Run, RunStatus
from agents.runner import execute
from agents.runner.frames import CollectingSink
from notifications.models import Notification
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import text_model

pytestmark = pytest.mark.django_db(transaction=True)


def failing_model() -> FunctionModel:
    async def stream(messages, info):
        raise ModelHTTPError(500, "scripted", body={"error": "the candidate breaks"})
        yield ""  # pragma: no cover  (makes this an async generator)

    return FunctionModel(stream_function=stream, model_name="failing")


@pytest.fixture
def two_versions(org, owner):
    """v1 on the "Demo" profile serves production; v2 on the "Candidate" profile is published beside it."""
    agent, v1 = publish(org, owner)
    actor = actor_of(owner, org)
    candidate_profile = ModelProfile.objects.create(organization=org, label="Candidate", provider="demo", model="demo")
    agent_services.update_agent(actor=actor, agent=agent,
                                spec={**agent.draft_spec, "model_profile_id": str(candidate_profile.pk)})
    v2 = agent_services.publish_agent(actor=actor, agent=agent, note="candidate")
    assert agent_services.environment_version(agent, "production") == v1
    return agent, v1, v2


@pytest.fixture
def models_by_profile(monkeypatch):
    """Each profile's scripted model: the base answers well; the test decides what the candidate does."""
    chosen: dict[str, FunctionModel] = {"Demo": text_model("All good.")}
    monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: chosen[profile.label])
    return chosen


def _turn(actor, agent, conversation_id=None) -> Run:
    run, _ = start_member_run(actor=actor, agent_id=agent.pk, text="Hello", surface="web",
                              conversation_id=conversation_id, create_conversation=True)
    return run


def _execute(run: Run) -> Run:
    execute(run.pk, CollectingSink())
    run.refresh_from_db()
    return run


def test_a_20_percent_rollout_sends_a_fifth_of_new_conversations_to_the_candidate(org, owner, two_versions):
    agent, v1, v2 = two_versions
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=20)
    admitted = [_turn(actor, agent) for _ in range(200)]
    on_candidate = sum(run.version_id == v2.pk for run in admitted)
    # Conversation and rollout ids are random, so the count is binomial(200, 0.2): the tolerance is ±4.5σ
    # (±25 runs, ±12.7 points), which a fair hash misses once in ~150,000 runs of this test.
    sigma = math.sqrt(200 * 0.2 * 0.8)
    assert abs(on_candidate - 40) <= 4.5 * sigma, on_candidate
    assert all(run.version_id in (v1.pk, v2.pk) for run in admitted)
    assert all(run.options["rollout"] == str(rollout.pk) for run in admitted)
    # The bucket function itself over 10,000 keys: within ±4.5σ = ±1.8 points of the share.
    keys = sum(rollouts.bucket(rollout.pk, f"visitor-{i}") < 2000 for i in range(10_000))
    assert abs(keys - 2000) <= 4.5 * math.sqrt(10_000 * 0.2 * 0.8), keys


def test_the_same_key_always_lands_on_the_same_version(org, owner, two_versions):
    agent, v1, _v2 = two_versions
    rollout = rollouts.start_rollout(actor=actor_of(owner, org), agent=agent, environment="production", candidate=2,
                                     share=50)
    first = [rollouts.route(base=v1, rollout_id=rollout.pk, key=f"thread-{i}").version.pk for i in range(50)]
    again = [rollouts.route(base=v1, rollout_id=rollout.pk, key=f"thread-{i}").version.pk for i in range(50)]
    assert first == again and len(set(first)) == 2


def test_a_conversation_keeps_the_version_its_first_run_had_across_turns(org, owner, two_versions, models_by_profile):
    agent, v1, v2 = two_versions
    models_by_profile["Candidate"] = text_model("Candidate here.")
    actor = actor_of(owner, org)
    before = _execute(_turn(actor, agent))  # begun before the rollout: on the base for its life
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=50)
    firsts = [_execute(_turn(actor, agent)) for _ in range(12)]
    by_version = {run.version_id: run for run in firsts}
    assert set(by_version) == {v1.pk, v2.pk}  # 12 conversations at 50 %: both arms (fails with p = 2 × 0.5¹²)
    for first in [before, *by_version.values()]:
        for _ in range(2):
            later = _execute(_turn(actor, agent, conversation_id=first.conversation_id))
            assert later.status == RunStatus.COMPLETED
            assert later.version_id == first.version_id
    # Paused: no new conversation goes to the candidate, the ones on it stay there.
    rollouts.pause_rollout(actor=actor, rollout=rollout)
    assert {_turn(actor, agent).version_id for _ in range(8)} == {v1.pk}
    on_candidate = by_version[v2.pk]
    assert _turn(actor, agent, conversation_id=on_candidate.conversation_id).version_id == v2.pk
    # Aborted: everyone is back on the base, the candidate's conversations too.
    rollouts.abort_rollout(actor=actor, rollout=rollout)
    assert _turn(actor, agent, conversation_id=on_candidate.conversation_id).version_id == v1.pk
    assert Environment.objects.get(agent=agent, name="production").rollout_id is None


def test_a_failing_candidate_is_rolled_back_by_itself(org, owner, two_versions, models_by_profile):
    agent, v1, v2 = two_versions
    models_by_profile["Candidate"] = failing_model()
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=50,
                                     min_runs=5)
    ended = []
    for _ in range(60):
        run = _execute(_turn(actor, agent))
        ended.append(run)
        rollout.refresh_from_db()
        if rollout.status != Rollout.Status.ACTIVE:
            break
    candidate_runs = [run for run in ended if run.version_id == v2.pk]
    assert rollout.status == Rollout.Status.ROLLED_BACK and rollout.share == 0
    # Rolled back on the run that made the fifth ended candidate run, not before and not later.
    assert len(candidate_runs) == 5 and all(run.status == RunStatus.FAILED for run in candidate_runs)
    assert all(run.status == RunStatus.COMPLETED for run in ended if run.version_id == v1.pk)
    assert "failed 5 of 5 runs" in rollout.reason
    event = AuditEvent.objects.get(action="rollout.rolled_back")
    assert event.details["rollout_id"] == str(rollout.pk) and event.details["candidate_version"] == 2
    assert event.details["reason"] == rollout.reason
    note = Notification.objects.get(kind=Notification.Kind.ROLLOUT_ROLLED_BACK)
    assert note.recipient == owner and note.organization == org and "rolled back" in note.text
    # Nobody is served the candidate any more, its conversations neither.
    assert Environment.objects.get(agent=agent, name="production").rollout_id is None
    assert {_turn(actor, agent).version_id for _ in range(10)} == {v1.pk}
    assert _turn(actor, agent, conversation_id=candidate_runs[0].conversation_id).version_id == v1.pk
    # The watcher runs once per ending: a second check changes nothing, and no second notification.
    assert rollouts.check_thresholds(rollout.pk) is False
    assert Notification.objects.count() == 1


def test_a_candidate_that_holds_up_is_not_rolled_back(org, owner, two_versions, models_by_profile):
    agent, _v1, v2 = two_versions
    models_by_profile["Candidate"] = text_model("Also good.")
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=50,
                                     min_runs=3)
    runs = [_execute(_turn(actor, agent)) for _ in range(16)]
    assert sum(run.version_id == v2.pk for run in runs) >= 3
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ACTIVE
    assert rollouts.watch_open_rollouts() == 0
    assert not AuditEvent.objects.filter(action="rollout.rolled_back").exists()
    assert not Notification.objects.exists()
    measured = rollouts.metrics(rollout)
    assert measured["candidate"]["runs"] + measured["base"]["runs"] == 16
    assert measured["candidate"]["failed"] == 0 and measured["candidate"]["p95_duration_seconds"] is not None


def test_a_run_ended_outside_the_runner_is_caught_by_the_beat_backstop(org, owner, two_versions):
    agent, _v1, v2 = two_versions
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=99,
                                     min_runs=2)
    admitted = [_turn(actor, agent) for _ in range(6)]
    lost = [run for run in admitted if run.version_id == v2.pk][:2]
    assert len(lost) == 2
    # As the stale-run sweep ends them (agents.runner.finish): no runner, so no run-ended hook.
    Run.objects.filter(pk__in=[run.pk for run in lost]).update(status=RunStatus.FAILED)
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ACTIVE
    assert rollouts.watch_open_rollouts() == 1
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ROLLED_BACK


def test_the_rolled_back_owner_hears_by_email_too(org, owner, two_versions, mailoutbox):
    agent, _v1, v2 = two_versions
    rollout = rollouts.start_rollout(actor=actor_of(owner, org), agent=agent, environment="production",
                                     candidate=2, share=99, min_runs=1)
    lost = next(run for run in (_turn(actor_of(owner, org), agent) for _ in range(6)) if run.version_id == v2.pk)
    Run.objects.filter(pk=lost.pk).update(status=RunStatus.FAILED)
    assert rollouts.check_thresholds(rollout.pk) is True
    assert [mail.to for mail in mailoutbox] == [[owner.email]]
    assert "rolled back" in mailoutbox[0].body and f"/agents/{agent.pk}/" in mailoutbox[0].body


def _ended(runs, status=RunStatus.COMPLETED):
    from django.utils import timezone

    Run.objects.filter(pk__in=[run.pk for run in runs]).update(status=status, started_at=timezone.now(),
                                                                finished_at=timezone.now())


def test_scheduled_steps_wait_for_their_time_and_their_runs_then_move_and_promote(org, owner, two_versions):
    from datetime import timedelta

    agent, _v1, v2 = two_versions
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=20,
                                     steps=[50, 100], step_minutes=30, min_runs=3)
    assert rollouts.watch_open_rollouts() == 0  # not due yet
    Rollout.objects.filter(pk=rollout.pk).update(stepped_at=rollout.stepped_at - timedelta(minutes=31))
    rollout.refresh_from_db()
    waiting = rollouts.metrics(rollout)["next_step"]
    assert waiting["share"] == 50 and "waits for 3 ended runs" in waiting["waiting_for"]
    assert rollouts.watch_open_rollouts() == 0  # due, but blind: no candidate run has ended

    admitted = [_turn(actor, agent) for _ in range(80)]
    on_candidate = [run for run in admitted if run.version_id == v2.pk]
    assert len(on_candidate) >= 3
    _ended(admitted)
    assert rollouts.watch_open_rollouts() == 1
    rollout.refresh_from_db()
    assert rollout.share == 50 and rollout.status == Rollout.Status.ACTIVE
    event = AuditEvent.objects.get(action="rollout.advanced")
    assert event.details["from_share"] == 20 and event.details["to_share"] == 50 and event.details["by"] == "schedule"
    assert rollouts.watch_open_rollouts() == 0  # the next step waits its own 30 minutes

    Rollout.objects.filter(pk=rollout.pk).update(stepped_at=rollout.stepped_at - timedelta(minutes=31))
    assert rollouts.watch_open_rollouts() == 1
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.PROMOTED
    assert Environment.objects.get(agent=agent, name="production").version == v2


def test_a_scheduled_step_is_not_taken_past_a_threshold_nor_for_someone_who_may_no_longer_publish(
        org, owner, two_versions):
    from datetime import timedelta

    from agenticos.models import Membership

    agent, _v1, v2 = two_versions
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=50,
                                     steps=[90], step_minutes=5, min_runs=2)
    Rollout.objects.filter(pk=rollout.pk).update(stepped_at=rollout.stepped_at - timedelta(minutes=6))
    admitted = [_turn(actor, agent) for _ in range(20)]
    _ended(admitted)
    Membership.objects.filter(organization=org, user=owner).update(is_suspended=True)
    assert rollouts.take_due_step(rollout.pk) is False
    rollout.refresh_from_db()
    assert rollout.share == 50  # the schedule stops; a person with the right moves it on
    Membership.objects.filter(organization=org, user=owner).update(is_suspended=False)
    _ended([run for run in admitted if run.version_id == v2.pk], status=RunStatus.FAILED)
    assert rollouts.watch_open_rollouts() == 1
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ROLLED_BACK and rollout.share == 0


def test_advancing_by_hand_follows_the_steps_and_refuses_a_share_that_does_not_move_up(org, owner, two_versions):
    from agenticos.errors import Invalid

    agent, _v1, v2 = two_versions
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=5,
                                     steps=[25, 50])
    assert rollouts.advance_rollout(actor=actor, rollout=rollout).share == 25
    with pytest.raises(Invalid, match="moves up from 25"):
        rollouts.advance_rollout(actor=actor, rollout=rollout, share=20)
    assert rollouts.advance_rollout(actor=actor, rollout=rollout).share == 50
    with pytest.raises(Invalid, match="no next step"):
        rollouts.advance_rollout(actor=actor, rollout=rollout)
    assert rollouts.advance_rollout(actor=actor, rollout=rollout, share=100).status == Rollout.Status.PROMOTED
    assert Environment.objects.get(agent=agent, name="production").version == v2


@pytest.mark.parametrize(("steps", "minutes", "field"), [
    ([5], None, "steps"), ([30, 20], None, "steps"), ([100, 100], None, "steps"), ([50, 101], None, "steps"),
    (["50"], None, "steps"), ([True], None, "steps"), (list(range(11, 100, 8)), None, "steps"),
    ([50], 4, "step_minutes"), ([], 30, "steps"),
])
def test_steps_that_cannot_be_followed_are_refused_at_the_field(org, owner, two_versions, steps, minutes, field):
    from agenticos.errors import Invalid

    agent, _v1, _v2 = two_versions
    with pytest.raises(Invalid) as refused:
        rollouts.start_rollout(actor=actor_of(owner, org), agent=agent, environment="production", candidate=2,
                               share=10, steps=steps, step_minutes=minutes)
    assert refused.value.details["field"] == field
    assert not Rollout.objects.exists()


@pytest.fixture
def half_and_half(org, owner, two_versions):
    """A 50 % rollout with 24 ended runs: (rollout, the candidate's runs, the base's runs), at least 3 and 1."""
    agent, v1, v2 = two_versions
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=50)
    admitted = [_turn(actor, agent) for _ in range(24)]
    _ended(admitted)
    on_candidate = [run for run in admitted if run.version_id == v2.pk]
    on_base = [run for run in admitted if run.version_id == v1.pk]
    assert len(on_candidate) >= 3 and len(on_base) >= 1
    return rollout, on_candidate, on_base


def test_rejected_approvals_are_counted_per_version(org, half_and_half):
    from governance.models import Approval

    rollout, on_candidate, on_base = half_and_half
    for number, run in enumerate(on_candidate[:2]):
        for call in range(2):  # two rejections in one run count that run once
            Approval.objects.create(organization=org, run=run, tool_call_id=f"c{number}-{call}", tool_id="t",
                                    tool_name="t", status=Approval.Status.REJECTED)
    Approval.objects.create(organization=org, run=on_base[0], tool_call_id="b", tool_id="t", tool_name="t",
                            status=Approval.Status.APPROVED)
    measured = rollouts.metrics(rollout)
    assert measured["candidate"]["approval_rejected"] == 2 and measured["base"]["approval_rejected"] == 0


def test_thumbs_down_are_counted_per_version_among_rated_runs(org, owner, half_and_half):
    from agents.models import Feedback, Message

    rollout, on_candidate, on_base = half_and_half
    agent = rollout.agent

    def rate(run, rating):
        answer = Message.objects.create(conversation_id=run.conversation_id, run=run, role="assistant",
                                        content="An answer.")
        Feedback.objects.create(organization=org, agent=agent, message=answer, run=run, user=owner, rating=rating)

    rate(on_candidate[0], "down")
    rate(on_candidate[1], "down")
    rate(on_candidate[2], "up")
    rate(on_base[0], "up")
    measured = rollouts.metrics(rollout)
    assert (measured["candidate"]["rated"], measured["candidate"]["thumbs_down"]) == (3, 2)
    assert measured["candidate"]["thumbs_down_share"] == pytest.approx(2 / 3)
    assert (measured["base"]["rated"], measured["base"]["thumbs_down"], measured["base"]["thumbs_down_share"]) == (
        1, 0, 0.0)


def _signal(org, owner, run, signal: str) -> None:
    """Give an ended run one of the watched bad signals, as the runner, a person approving or a 👎 would."""
    from agents.models import Feedback, Message
    from governance.models import Approval

    if signal == "guardrail":
        Run.objects.filter(pk=run.pk).update(status=RunStatus.GUARDRAIL_BLOCKED)
    elif signal == "rejection":
        Approval.objects.create(organization=org, run=run, tool_call_id="c", tool_id="t", tool_name="t",
                                status=Approval.Status.REJECTED)
    else:
        answer = Message.objects.create(conversation_id=run.conversation_id, run=run, role="assistant",
                                        content="An answer.")
        Feedback.objects.create(organization=org, agent=run.agent, message=answer, run=run, user=owner,
                                rating=signal)


WATCHED = [
    ("guardrail", "was blocked by a guardrail in 4 of 4 runs", "guardrail_multiple"),
    ("rejection", "had a tool call rejected in 4 of 4 runs", "rejection_multiple"),
    ("down", "got 👎 on 4 of 4 rated answers", "thumbs_down_multiple"),
]


@pytest.mark.parametrize(("signal", "reason", "field"), WATCHED)
def test_every_watched_share_rolls_the_candidate_back_by_itself_once_it_has_min_runs(
        org, owner, two_versions, mailoutbox, signal, reason, field):
    from agents import extensions

    agent, v1, v2 = two_versions
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=50,
                                     min_runs=4, cost_increase_pct=None)
    admitted = [_turn(actor, agent) for _ in range(40)]
    on_candidate = [run for run in admitted if run.version_id == v2.pk][:4]
    on_base = [run for run in admitted if run.version_id == v1.pk][:4]
    assert len(on_candidate) == 4 and len(on_base) == 4
    _ended(on_base)
    for run in on_base:  # the base answers well (rated 👍 where ratings are watched)
        if signal == "down":
            _signal(org, owner, run, "up")
    for number, run in enumerate(on_candidate, start=1):  # the candidate's runs end one by one, each badly
        _ended([run])
        _signal(org, owner, run, signal)
        run.refresh_from_db()
        extensions.run_ended(run, run.status)  # what the runner calls as a run ends
        rollout.refresh_from_db()
        # Judged only once the candidate has min_runs (of ended runs; of rated answers for 👎).
        assert rollout.status == (Rollout.Status.ROLLED_BACK if number == 4 else Rollout.Status.ACTIVE), number

    assert rollout.share == 0 and reason in rollout.reason and "at least 2.00× v1's 0%" in rollout.reason
    event = AuditEvent.objects.get(action="rollout.rolled_back")
    assert event.details["reason"] == rollout.reason and event.details["candidate_version"] == 2
    assert Notification.objects.get(kind=Notification.Kind.ROLLOUT_ROLLED_BACK).recipient == owner
    assert [mail.to for mail in mailoutbox] == [[owner.email]] and reason in mailoutbox[0].body
    assert Environment.objects.get(agent=agent, name="production").rollout_id is None
    comparison = rollouts.metrics(rollout)["comparisons"]
    counted = {"guardrail": "guardrail_blocked", "rejection": "approval_rejected", "down": "thumbs_down"}[signal]
    assert comparison[counted]["difference"] == 1.0
    assert comparison[counted]["note"].startswith("Not enough runs yet") and not comparison[counted]["significant"]


@pytest.mark.parametrize(("signal", "reason", "field"), WATCHED)
def test_a_watched_share_set_to_none_is_not_watched(org, owner, two_versions, signal, reason, field):
    agent, _v1, v2 = two_versions
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=99,
                                     min_runs=2, **{field: None})
    on_candidate = [run for run in (_turn(actor, agent) for _ in range(10)) if run.version_id == v2.pk][:2]
    assert len(on_candidate) == 2
    _ended(on_candidate)
    for run in on_candidate:
        _signal(org, owner, run, signal)
    assert rollouts.check_thresholds(rollout.pk) is False
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ACTIVE and getattr(rollout, field) is None


def test_a_thumbs_down_given_in_the_chat_checks_the_rollout_at_once(org, owner, two_versions, models_by_profile):
    from agents import feedback

    agent, _v1, v2 = two_versions
    models_by_profile["Candidate"] = text_model("Meh.")
    actor = actor_of(owner, org)
    rollout = rollouts.start_rollout(actor=actor, agent=agent, environment="production", candidate=2, share=99,
                                     min_runs=1)
    run = next(r for r in (_execute(_turn(actor, agent)) for _ in range(10)) if r.version_id == v2.pk)
    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ACTIVE  # it completed: nothing crossed yet
    answer = run.messages.get(role="assistant")

    feedback.give(actor=actor, conversation_id=run.conversation_id, message_id=answer.pk, rating="down")

    rollout.refresh_from_db()
    assert rollout.status == Rollout.Status.ROLLED_BACK and "got 👎 on 1 of 1 rated answers" in rollout.reason


def test_a_threshold_multiple_out_of_range_is_refused_at_its_field(org, owner, two_versions):
    from agenticos.errors import Invalid

    agent, _v1, _v2 = two_versions
    for bad in ("0.5", "abc", True, "NaN"):
        with pytest.raises(Invalid) as refused:
            rollouts.start_rollout(actor=actor_of(owner, org), agent=agent, environment="production", candidate=2,
                                   share=10, rejection_multiple=bad)
        assert refused.value.details["field"] == "rejection_multiple"
    assert not Rollout.objects.exists()
