"""Retention sweeps: what the deployment stops keeping, and when (beat: `triggers.tasks.retention_sweeps`).

Each sweep deletes in batches of RETENTION_BATCH_SIZE primary keys (a short statement each, no lock held
across the table), is idempotent (a second pass finds nothing), stops after MAX_BATCHES so one beat tick
stays short (the next tick carries on), and logs what it removed.

| what                                          | kept                                               |
|-----------------------------------------------|----------------------------------------------------|
| audit log                                     | RETENTION_AUDIT_DAYS (400)                         |
| workspaces of scope user / channel / agent    | until idle RETENTION_WORKSPACE_IDLE_DAYS (90)      |
| chat-account link requests                    | until expired (15 minutes after they were made)    |
| spend ledger (governance.SpendEntry)          | never deleted: every budget cap is computed from it |
| run transcripts and tool calls                | kept (no deployment default removes them)          |
| stored tool output                            | until its run ends (capabilities.tasks.sweep_spilled_outputs) |
| run-scope workspaces without a conversation   | capabilities.tasks.sweep_turn_workspaces           |
| channel dedup claims, webhook replay / idempotency keys | Redis keys with their own TTL: nothing to sweep |

Per-organization values (Settings → Data retention) are not built yet: these are deployment defaults.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

logger = logging.getLogger(__name__)

MAX_BATCHES = 50
WORKSPACE_SCOPES = ("user", "channel", "agent")


def _delete_in_batches(queryset: models.QuerySet, *, batch: int | None = None) -> int:
    """Delete what `queryset` selects, a batch of primary keys at a time; returns the rows of its model removed."""
    size = batch or settings.RETENTION_BATCH_SIZE
    model = queryset.model
    removed = 0
    for _ in range(MAX_BATCHES):
        ids = list(queryset.order_by("pk").values_list("pk", flat=True)[:size])
        if not ids:
            break
        _, per_model = model._default_manager.filter(pk__in=ids).delete()
        removed += per_model.get(model._meta.label, 0)
        if len(ids) < size:
            break
    return removed


def sweep_audit_log(now: datetime | None = None) -> int:
    from agenticos.models import AuditEvent

    cutoff = (now or timezone.now()) - timedelta(days=settings.RETENTION_AUDIT_DAYS)
    return _delete_in_batches(AuditEvent.objects.filter(created_at__lt=cutoff))


def sweep_idle_workspaces(now: datetime | None = None) -> int:
    """Shared workspaces nobody has used for the idle period (their files go with them). Run and
    conversation workspaces go with their run or conversation instead."""
    from capabilities.models import Workspace

    cutoff = (now or timezone.now()) - timedelta(days=settings.RETENTION_WORKSPACE_IDLE_DAYS)
    # A workspace's files can be megabytes each: smaller batches keep each statement short.
    return _delete_in_batches(Workspace.objects.filter(scope__in=WORKSPACE_SCOPES, last_used_at__lt=cutoff),
                              batch=max(10, settings.RETENTION_BATCH_SIZE // 10))


def sweep_link_requests(now: datetime | None = None) -> int:
    from channelbots.models import LinkRequest

    return _delete_in_batches(LinkRequest.objects.filter(expires_at__lt=now or timezone.now()))


SWEEPS: dict[str, Callable[..., int]] = {
    "audit_log": sweep_audit_log,
    "idle_workspaces": sweep_idle_workspaces,
    "expired_link_requests": sweep_link_requests,
}


def sweep_all(now: datetime | None = None) -> dict[str, int]:
    """Every sweep once; one failing does not stop the others. Returns {sweep: rows removed}."""
    now = now or timezone.now()
    removed: dict[str, int] = {}
    for name, sweep in SWEEPS.items():
        try:
            removed[name] = sweep(now)
        except Exception:
            logger.exception("retention sweep %s failed; the next run tries again", name)
            removed[name] = -1
    logger.info("retention sweeps removed %s", removed)
    return removed
