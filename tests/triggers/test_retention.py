"""Retention sweeps remove what they must and nothing else: a kept row next to each deleted one; batched,
idempotent; the spend ledger is never touched."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from agenticos.models import AuditEvent
from channelbots import retention as channel_retention
from channelbots.models import ChannelBot, ChannelIdentity, LinkRequest
from governance import retention
from governance.models import SpendEntry
from tests.factories import published_agent
from workspaces.models import Workspace, WorkspaceFile

pytestmark = pytest.mark.django_db


def test_the_audit_log_keeps_400_days_and_sweeps_in_batches(org, settings):
    settings.RETENTION_BATCH_SIZE = 10
    now = timezone.now()
    for n in range(25):
        AuditEvent.objects.create(organization=org, action="old", created_at=now - timedelta(days=401, hours=n))
    kept = AuditEvent.objects.create(organization=org, action="recent", created_at=now - timedelta(days=399))
    assert retention.sweep_audit_log(now) == 25
    assert list(AuditEvent.objects.values_list("pk", flat=True)) == [kept.pk]
    assert retention.sweep_audit_log(now) == 0  # idempotent


def test_idle_shared_workspaces_go_with_their_files_and_others_stay(org, owner):
    agent = published_agent(org, owner)
    now = timezone.now()
    old = now - timedelta(days=91)

    def workspace(scope, key, used):
        ws = Workspace.objects.create(organization=org, agent=agent, scope=scope, key=key, last_used_at=used)
        WorkspaceFile.objects.create(workspace=ws, path="/workspace/a.txt", data=b"x", size=1)
        return ws

    idle = [workspace(scope, f"{scope}-idle", old) for scope in ("user", "channel", "agent")]
    fresh = workspace("user", "user-fresh", now - timedelta(days=89))
    conversation_scoped = workspace("conversation", "c-1", old)  # goes with its conversation, not here
    assert retention.sweep_idle_workspaces(now) == 3
    left = set(Workspace.objects.values_list("pk", flat=True))
    assert left == {fresh.pk, conversation_scoped.pk} and not left & {w.pk for w in idle}
    assert WorkspaceFile.objects.count() == 2


def test_expired_link_requests_go_and_live_ones_stay(org, owner):
    bot = ChannelBot.objects.create(organization=org, platform="slack", name="bot")
    identity = ChannelIdentity.objects.create(organization=org, platform="slack", account_id="U1")
    now = timezone.now()
    LinkRequest.objects.create(organization=org, identity=identity, bot=bot, token_hash="a" * 64,
                               expires_at=now - timedelta(minutes=1))
    live = LinkRequest.objects.create(organization=org, identity=identity, bot=bot, token_hash="b" * 64,
                                      expires_at=now + timedelta(minutes=10))
    assert channel_retention.sweep_link_requests(now) == 1
    assert list(LinkRequest.objects.values_list("pk", flat=True)) == [live.pk]


def test_sweep_all_reports_each_sweep_and_never_touches_the_spend_ledger(org, owner):
    agent = published_agent(org, owner)
    SpendEntry.objects.create(organization=org, agent=agent, kind="model_request", cost_usd=Decimal("1.5"),
                              created_at=timezone.now() - timedelta(days=2000))
    AuditEvent.objects.create(organization=org, action="old", created_at=timezone.now() - timedelta(days=500))
    removed = retention.sweep_all()
    assert removed["audit_log"] == 1 and set(removed) == {"audit_log", "idle_workspaces", "expired_link_requests",
                                                          "transcript_messages", "tool_calls", "run_texts",
                                                          "emptied_conversations", "removed_files",
                                                          "generated_media", "compacted_histories",
                                                          "unsent_chat_uploads", "replay_results"}
    assert SpendEntry.objects.count() == 1


def test_beat_runs_the_trigger_dispatcher_every_minute_and_the_sweeps_hourly(settings):
    from config.celery import app

    app.loader.import_default_modules()
    schedule = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["triggers.tasks.dispatch_due_triggers"] == 60.0
    assert schedule["triggers.tasks.retention_sweeps"] == 3600.0
    assert {"triggers.tasks.dispatch_due_triggers", "triggers.tasks.retention_sweeps",
            "triggers.tasks.deliver_to_channel"} <= set(app.tasks)
