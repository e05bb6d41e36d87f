"""Operator console: triggers list their last and next firing without a query per row; the firing log is
read-only; pausing in bulk clears the next firing and is audited."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agenticos.models import AuditEvent
from tests import factories
from tests.triggers.conftest import make_trigger
from triggers.firing import dispatch_due
from triggers.models import Trigger, TriggerFiring

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(client):
    operator = factories.user(is_staff=True, is_superuser=True)
    client.force_login(operator)
    return client


def _fired(owner, org, agent, name):
    trigger, _ = make_trigger(owner, org, agent, name=name, cron=None, every_seconds=60)
    dispatch_due(trigger.next_run_at + timedelta(seconds=1))
    return trigger


def test_the_trigger_list_shows_last_and_next_firing_in_a_fixed_number_of_queries(console, org, owner, agent):
    url = reverse("admin:triggers_trigger_changelist")
    _fired(owner, org, agent, "first")
    with CaptureQueriesContext(connection) as before:
        page = console.get(url)
    assert page.status_code == 200 and "started" in page.content.decode()
    for name in ("second", "third", "fourth"):
        _fired(owner, org, agent, name)
    with CaptureQueriesContext(connection) as after:
        page = console.get(url)
    assert "fourth" in page.content.decode()
    assert len(after) == len(before)


def test_the_firing_log_is_read_only(console, org, owner, agent):
    _fired(owner, org, agent, "first")
    firing = TriggerFiring.objects.get()
    change = reverse("admin:triggers_triggerfiring_change", args=[firing.pk])
    assert console.post(change, {"status": "failed"}).status_code == 403
    assert console.post(reverse("admin:triggers_triggerfiring_delete", args=[firing.pk]), {"post": "yes"}).status_code == 403
    assert TriggerFiring.objects.get().status == "started"


def test_pausing_in_bulk_clears_the_next_firing_and_is_audited(console, org, owner, agent):
    trigger, _ = make_trigger(owner, org, agent)
    response = console.post(reverse("admin:triggers_trigger_changelist"),
                            {"action": "pause", "_selected_action": [str(trigger.pk)]})
    assert response.status_code == 302
    trigger = Trigger.objects.get()
    assert (trigger.enabled, trigger.next_run_at) == (False, None)
    assert AuditEvent.objects.filter(action="admin.trigger.pause", target_id=str(trigger.pk)).exists()
