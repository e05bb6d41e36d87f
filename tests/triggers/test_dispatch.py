"""The beat dispatcher: a schedule fires at its due minute exactly once, even with two dispatchers at once;
overlap skip / queue; pause; missed firings collapse into the latest; a creator without access fires nothing."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection

from agenticos.models import Membership
from agents.models import Run, RunStatus
from tests.runner.conftest import actor_of
from tests.triggers.conftest import make_trigger
from triggers import services
from triggers.firing import dispatch_due
from triggers.models import Trigger, TriggerFiring

pytestmark = pytest.mark.django_db


def _dispatch_in_threads(now, count=2) -> list[dict]:
    barrier = threading.Barrier(count)
    results: list[dict] = []

    def work():
        try:
            barrier.wait(timeout=10)
            results.append(dispatch_due(now))
        finally:
            connection.close()

    threads = [threading.Thread(target=work) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return results


# Two dispatcher threads, each on its own connection, race for the same committed trigger.
@pytest.mark.django_db(transaction=True)
def test_a_cron_trigger_fires_at_its_due_minute_exactly_once_with_two_dispatchers(org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent, cron="0 9 * * *", timezone="Europe/Madrid")
    due = trigger.next_run_at
    assert (due.astimezone(services.schedule.zone("Europe/Madrid")).hour, due.minute) == (9, 0)

    assert dispatch_due(due - timedelta(seconds=1)) == {"started": 0, "skipped": 0, "failed": 0, "waiting": 0}
    assert not Run.objects.exists()

    results = _dispatch_in_threads(due + timedelta(seconds=5))
    assert sorted(r["started"] for r in results) == [0, 1]
    firing = TriggerFiring.objects.get()
    assert (firing.due_at, firing.status, firing.source) == (due, "started", "schedule")
    run = Run.objects.get()
    assert firing.run_id == run.pk
    assert (run.surface, run.user_id, run.prompt) == ("schedule", owner.pk, "Write the nightly report.")
    assert run.options["trigger"]["id"] == str(trigger.pk) and run.options["can_ask_user"] is False

    dispatch_due(due + timedelta(seconds=30))  # the same minute again: nothing new
    assert Run.objects.count() == 1
    trigger.refresh_from_db()
    assert trigger.next_run_at == due + timedelta(days=1)


def test_missed_firings_after_downtime_are_not_replayed_beyond_the_latest(org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent, cron=None, every_seconds=300)
    first = trigger.next_run_at
    dispatch_due(first + timedelta(minutes=32))  # six due times passed while beat was down
    firing = TriggerFiring.objects.get()
    assert firing.due_at == first + timedelta(minutes=30)
    trigger.refresh_from_db()
    assert trigger.next_run_at == first + timedelta(minutes=35)


def test_overlap_skip_records_a_skipped_firing_while_the_previous_run_is_going(org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent, cron=None, every_seconds=60)
    first = trigger.next_run_at
    dispatch_due(first)
    dispatch_due(first + timedelta(minutes=1))
    started, skipped = TriggerFiring.objects.order_by("due_at")
    assert (started.status, skipped.status) == ("started", "skipped")
    assert skipped.run_id is None and "still going" in skipped.reason
    assert Run.objects.count() == 1

    Run.objects.update(status=RunStatus.COMPLETED)
    dispatch_due(first + timedelta(minutes=2))
    assert Run.objects.count() == 2


def test_overlap_queue_starts_the_waiting_firing_once_the_previous_run_ends(org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent, cron=None, every_seconds=60, overlap="queue")
    first = trigger.next_run_at
    dispatch_due(first)
    dispatch_due(first + timedelta(minutes=1))
    dispatch_due(first + timedelta(minutes=2))
    statuses = list(TriggerFiring.objects.order_by("due_at").values_list("status", flat=True))
    assert statuses == ["started", "waiting", "skipped"]
    assert Run.objects.count() == 1

    Run.objects.update(status=RunStatus.COMPLETED)
    dispatch_due(first + timedelta(minutes=2, seconds=10))
    waited = TriggerFiring.objects.get(due_at=first + timedelta(minutes=1))
    assert waited.status == "started" and waited.run_id is not None
    assert Run.objects.count() == 2


def test_a_paused_trigger_does_not_fire_and_resuming_does_not_replay(org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent, cron=None, every_seconds=60)
    due = trigger.next_run_at
    services.set_enabled(actor=actor_of(owner, org), trigger=trigger, enabled=False)
    assert Trigger.objects.get(pk=trigger.pk).next_run_at is None
    dispatch_due(due + timedelta(minutes=10))
    assert not TriggerFiring.objects.exists() and not Run.objects.exists()

    services.set_enabled(actor=actor_of(owner, org), trigger=trigger, enabled=True)
    dispatch_due(due + timedelta(minutes=10))
    assert TriggerFiring.objects.count() == 1 and Run.objects.count() == 1  # one firing, not ten


def test_a_creator_who_left_fires_a_failed_firing_and_no_run(org, owner, admin_user, agent):
    trigger, _ = make_trigger(admin_user, org, agent, cron=None, every_seconds=60)
    Membership.objects.filter(user=admin_user, organization=org).update(is_suspended=True)
    dispatch_due(trigger.next_run_at)
    firing = TriggerFiring.objects.get()
    assert firing.status == "failed" and "no longer" in firing.reason
    assert not Run.objects.exists()


def test_a_schedule_window_bounds_the_firings(org, owner, agent):
    from django.utils import timezone

    start = timezone.now() + timedelta(hours=1)
    trigger, _ = make_trigger(owner, org, agent, cron=None, every_seconds=3600, starts_at=start,
                              ends_at=start + timedelta(hours=1, minutes=30))
    assert trigger.next_run_at == start
    dispatch_due(start)
    dispatch_due(start + timedelta(hours=1))
    assert TriggerFiring.objects.count() == 2
    trigger.refresh_from_db()
    assert trigger.next_run_at is None
