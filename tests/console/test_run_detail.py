"""A run's page: who approved (or rejected) each call and when, how long each step took, the model and the
version used. A member sees their own runs only; an outsider none."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import ModelProfile, Run, ToolCall
from governance.models import Approval, SpendEntry
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def decided_run(org, owner, admin_user, agent):
    _c, run = make_turn(org, owner, agent, tools=("create_chart", "run_python"))
    start = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=run.pk).update(created_at=start, started_at=start + timedelta(seconds=2),
                                         finished_at=start + timedelta(seconds=14))
    first, second = run.tool_calls.order_by("id")
    ToolCall.objects.filter(pk=first.pk).update(started_at=start + timedelta(seconds=3),
                                                finished_at=start + timedelta(seconds=4, milliseconds=500))
    ToolCall.objects.filter(pk=second.pk).update(started_at=start + timedelta(seconds=5),
                                                 finished_at=start + timedelta(seconds=11))
    Approval.objects.create(organization=org, run=run, tool_call_id=second.tool_call_id, tool_id="sandbox",
                            tool_name="run_python", args={}, status="approved", decided_by=admin_user,
                            decided_at=start + timedelta(seconds=6), note="looks safe")
    Approval.objects.create(organization=org, run=run, tool_call_id="never-ran", tool_id="t", tool_name="send_email",
                            args={}, status="rejected", decided_by=admin_user, decided_at=start + timedelta(seconds=7))
    SpendEntry.objects.create(organization=org, agent=agent, run=run, surface="web", model="gpt-4o-mini",
                              cost_usd=Decimal("0.0012"))
    run.refresh_from_db()
    return run


def test_it_shows_who_approved_each_call_when_and_each_steps_duration(client_as, org, owner, admin_user, decided_run):
    page = client_as(owner, org).get(f"/activity/runs/{decided_run.pk}/").content.decode()
    when = (decided_run.created_at + timedelta(seconds=6)).strftime("%Y-%m-%d %H:%M:%S")
    # A detail: the date in the person's locale and zone once drawn (data-when="full"); the server's text before.
    assert f'approved by {admin_user.label} at <time datetime=' in page and f'data-when="full">{when}</time>' in page
    assert "looks safe" in page
    assert f"rejected by {admin_user.label}" in page and "send_email" in page
    assert "1.50 s" in page and "6.00 s" in page
    assert "Worked 12.00 s" in page and "Waited 2.00 s in the queue" in page


def test_it_names_the_model_profile_and_version_and_the_billed_models(client_as, org, owner, decided_run):
    page = client_as(owner, org).get(f"/activity/runs/{decided_run.pk}/").content.decode()
    named = ModelProfile.objects.get(pk=decided_run.version.spec["model_profile_id"])
    assert f"{named.provider}:{named.model}" in page and named.label in page
    assert f"Version {decided_run.version.number}" in page
    assert "gpt-4o-mini" in page and "1 request" in page


def test_a_members_or_outsiders_view_of_someone_elses_run_is_404(client_as, org, member, outsider, outsider_org,
                                                                decided_run):
    assert client_as(member, org).get(f"/activity/runs/{decided_run.pk}/").status_code == 404
    assert client_as(outsider, outsider_org).get(f"/activity/runs/{decided_run.pk}/").status_code == 404


def test_the_page_does_not_grow_its_queries_with_its_calls(client_as, org, owner, agent):
    client = client_as(owner, org)
    _c, few = make_turn(org, owner, agent, tools=("a",))
    _c, many = make_turn(org, owner, agent, tools=tuple(f"t{i}" for i in range(8)))
    for run in (few, many):
        for call in run.tool_calls.all():
            Approval.objects.create(organization=org, run=run, tool_call_id=call.tool_call_id, tool_id="t",
                                    tool_name=call.tool_name, args={}, status="approved", decided_by=owner,
                                    decided_at=timezone.now())
    counts = []
    for run in (few, many):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"/activity/runs/{run.pk}/").status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_it_lists_the_workers_a_run_was_lost_by_and_resumed_on(client_as, org, owner, decided_run):
    Run.objects.filter(pk=decided_run.pk).update(events=[
        {"type": "run_interrupted", "at": "2026-12-06T10:00:00+00:00", "reason": "worker_lost", "worker": "w1:11"},
        {"type": "run_resumed", "at": "2026-12-06T10:00:45+00:00", "worker": "w2:22", "from_step": 3,
         "waited_seconds": 44.5},
        {"type": "run_interrupted", "at": "2026-12-06T10:05:00+00:00", "reason": "shutdown", "worker": "w2:22"}])
    page = client_as(owner, org).get(f"/activity/runs/{decided_run.pk}/").content.decode()
    assert "Its worker w1:11 was lost" in page
    assert "Resumed by w2:22 from step 3, after 44.5 s" in page
    assert "Handed back by w2:22, which was shutting down" in page


def test_a_run_never_interrupted_shows_no_worker_changes(client_as, org, owner, decided_run):
    assert "data-run-events" not in client_as(owner, org).get(f"/activity/runs/{decided_run.pk}/").content.decode()
