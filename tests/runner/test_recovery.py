"""Handing a lost worker's runs on (agents/runner/recovery.py), in process: the sweep moves a stale run once, a
handed-back run whose broker message was lost is sent again, and the heartbeat is a lease a stalled worker loses."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Run, RunStatus
from agents.runner.checkpoint import worker_name
from agents.runner.finish import requeue_lost_runs, sweep_stale_runs
from agents.runner.loop import beat_rows
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def enqueued(monkeypatch) -> list:
    sent: list = []
    monkeypatch.setattr("agents.runs.enqueue_run", sent.append)
    return sent


def test_a_stale_run_is_handed_back_once_however_often_the_sweep_runs(org, owner, enqueued):
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, worker="gone:1",
                                         heartbeat_at=timezone.now() - timedelta(hours=1))
    assert sweep_stale_runs() == 1
    assert sweep_stale_runs() == 0  # it is queued now: nothing for a second sweep to move
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and enqueued == [run.pk]
    assert [e["type"] for e in run.events] == ["run_interrupted"] and run.worker == ""


def test_a_handed_back_run_whose_message_was_lost_is_sent_again(org, owner, enqueued):
    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    waiting_since = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=run.pk).update(started_at=waiting_since, heartbeat_at=waiting_since,
                                         events=[{"type": "run_interrupted"}])
    just_handed = start(org, owner, agent, version)
    Run.objects.filter(pk=just_handed.pk).update(started_at=waiting_since, heartbeat_at=timezone.now(),
                                                 events=[{"type": "run_interrupted"}])
    assert requeue_lost_runs() == 1
    assert enqueued == [run.pk]


def test_a_queued_run_is_sent_again_once_per_bound_however_often_the_sweep_runs(org, owner, enqueued, settings):
    agent, version = publish(org, owner)
    lost = start(org, owner, agent, version)
    Run.objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert requeue_lost_runs() == 1
    assert requeue_lost_runs() == 0  # its new delivery is recent: a second sweep sends nothing
    assert enqueued == [lost.pk]
    stamped = Run.objects.get(pk=lost.pk)
    assert stamped.status == RunStatus.QUEUED and stamped.heartbeat_at > timezone.now() - timedelta(minutes=1)
    # Still not taken a bound later (its second message was lost too): sent once more.
    Run.objects.filter(pk=lost.pk).update(heartbeat_at=timezone.now() - settings.RUN_REDELIVER_AFTER
                                          - timedelta(seconds=1))
    assert requeue_lost_runs() == 1
    assert enqueued == [lost.pk, lost.pk]


def test_a_run_resumed_from_a_park_counts_its_delivery_from_the_resume(org, owner, enqueued):
    from governance import services as governance

    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    long_ago = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.AWAITING_ANSWER, started_at=long_ago,
                                         heartbeat_at=long_ago)
    governance._resume_locked(actor_of(owner, org), Run.objects.get(pk=run.pk))
    assert enqueued == [run.pk]  # its own message
    assert requeue_lost_runs() == 0  # not a second one at the next sweep
    # Its message lost (the broker flushed), it is sent again once the bound has passed.
    Run.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    assert requeue_lost_runs() == 1 and enqueued == [run.pk, run.pk]


def test_an_unreachable_broker_does_not_fail_the_start_of_a_run(org, owner, monkeypatch):
    from kombu.exceptions import OperationalError

    def refused(run_id) -> None:
        raise OperationalError("Error 111 connecting to the broker. Connection refused.")

    monkeypatch.setattr("agents.runs.enqueue_run", refused)
    agent, version = publish(org, owner)
    from agents.runs import start_run

    # The surface is not told (the run is queued in PostgreSQL): the sweep sends it once the broker is back.
    run = start_run(agent=agent, version=version, surface="web", prompt="Hello", user=owner, acting_role="owner")
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


def test_the_heartbeat_beats_only_the_rows_this_process_holds(org, owner):
    agent, version = publish(org, owner)
    mine, taken_over = start(org, owner, agent, version), start(org, owner, agent, version)
    long_ago = timezone.now() - timedelta(minutes=1)
    Run.objects.filter(pk=mine.pk).update(status=RunStatus.RUNNING, worker=worker_name(), heartbeat_at=long_ago)
    Run.objects.filter(pk=taken_over.pk).update(status=RunStatus.RUNNING, worker="other-host:7",
                                                heartbeat_at=long_ago)
    stop, held = beat_rows([str(mine.pk), str(taken_over.pk)])
    assert stop == [] and held == [str(mine.pk)]
    assert Run.objects.get(pk=mine.pk).heartbeat_at > long_ago
    assert Run.objects.get(pk=taken_over.pk).heartbeat_at == long_ago  # the other worker's lease, untouched


def test_a_run_that_already_ran_is_sent_again_after_the_heartbeats_bound_a_new_one_after_the_redelivery_bound(
        org, owner, enqueued, settings):
    """A worker killed between taking a handed-back run's message (acked when accepted) and claiming it leaves the
    run queued with no message: it is sent again once the heartbeat's bound has passed, not the whole redelivery
    bound — the resume-within-a-minute promise. A never-started run keeps the longer bound (a backlog of new runs
    is not sent twice)."""
    settings.RUN_HEARTBEAT_STALE_AFTER = timedelta(seconds=40)
    settings.RUN_REDELIVER_AFTER = timedelta(seconds=120)
    agent, version = publish(org, owner)
    a_minute_ago = timezone.now() - timedelta(seconds=60)
    handed_back = start(org, owner, agent, version)
    Run.objects.filter(pk=handed_back.pk).update(started_at=a_minute_ago, heartbeat_at=a_minute_ago,
                                                 events=[{"type": "run_interrupted"}])
    never_started = start(org, owner, agent, version)
    Run.objects.filter(pk=never_started.pk).update(created_at=a_minute_ago)
    assert requeue_lost_runs() == 1
    assert enqueued == [handed_back.pk]
    Run.objects.filter(pk=never_started.pk).update(created_at=timezone.now() - timedelta(seconds=121))
    assert requeue_lost_runs() == 1
    assert enqueued == [handed_back.pk, never_started.pk]


def test_a_worker_known_dead_hands_its_runs_back_at_once_and_leaves_every_other_run_alone(org, owner, enqueued):
    """What a restarted worker does as it starts (config.celery): the runs of the worker it replaces go back to
    the queue without waiting for the heartbeat's bound — but never a run beaten after its start (its own), nor
    another worker's."""
    from agents.runner.finish import hand_back_runs_of

    agent, version = publish(org, owner)
    started = timezone.now()
    recent = started - timedelta(seconds=3)  # well inside the heartbeat's bound: the sweep would not move these
    dead, own, other = (start(org, owner, agent, version) for _ in range(3))
    Run.objects.filter(pk=dead.pk).update(status=RunStatus.RUNNING, worker="vm:41", heartbeat_at=recent)
    Run.objects.filter(pk=own.pk).update(status=RunStatus.RUNNING, worker="vm:41",
                                         heartbeat_at=started + timedelta(seconds=1))
    Run.objects.filter(pk=other.pk).update(status=RunStatus.RUNNING, worker="vm:42", heartbeat_at=recent)
    assert sweep_stale_runs() == 0
    assert hand_back_runs_of(["vm:41", ""], before=started) == 1
    assert hand_back_runs_of(["vm:41"], before=started) == 0  # already queued
    assert enqueued == [dead.pk]
    dead.refresh_from_db()
    assert dead.status == RunStatus.QUEUED and dead.worker == ""
    assert dead.events[-1]["type"] == "run_interrupted" and dead.events[-1]["worker"] == "vm:41"
    assert Run.objects.get(pk=own.pk).status == RunStatus.RUNNING
    assert Run.objects.get(pk=other.pk).status == RunStatus.RUNNING
    assert hand_back_runs_of(["", ""], before=started) == 0


def test_a_run_that_keeps_killing_its_workers_ends_failed_when_its_worker_is_known_dead_too(org, owner, enqueued,
                                                                                           settings):
    from agents.runner.finish import hand_back_runs_of

    agent, version = publish(org, owner)
    run = start(org, owner, agent, version)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, worker="vm:7",
                                         heartbeat_at=timezone.now() - timedelta(seconds=2),
                                         events=[{"type": "run_interrupted"}] * settings.RUN_MAX_RESUMES)
    assert hand_back_runs_of(["vm:7"], before=timezone.now()) == 1
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error["type"] == "WorkerLost" and enqueued == []


def test_the_launcher_and_the_runner_name_the_predecessor_alike():
    from agents.runner.recovery import PREDECESSOR_ENV
    from config.supervision import PREDECESSOR_ENV as LAUNCHERS

    assert PREDECESSOR_ENV == LAUNCHERS
