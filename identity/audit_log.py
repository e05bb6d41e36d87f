"""The audit trail out of the building: filtered reads, cursor pages and CSV / JSON Lines exports of an
organization's audit events, for roles that may read audit (`audit:read`).

One filter function serves the REST API (`GET /api/v1/audit`, `GET /api/v1/audit/export`) and the console's
Settings → Audit, so a filter means the same everywhere.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_datetime

from agenticos.errors import Invalid
from agenticos.models import AuditEvent
from agenticos.strings import digits_only
from agenticos.tenancy import Actor

EXPORT_COLUMNS = ["id", "created_at", "action", "actor_id", "actor", "target_type", "target_id", "target_name",
                  "ip_address", "details"]
EXPORT_LIMIT = 100_000  # one export; narrow the time range for more
EXPORT_BATCH = 2000


def _when(raw: str, name: str) -> datetime:
    value = parse_datetime(raw)
    if value is None or value.tzinfo is None:
        raise Invalid("A time filter is an ISO 8601 date-time with its offset.",
                      details={"problems": [{"field": name, "message": "e.g. 2026-01-31T00:00:00Z"}]})
    return value


def events(actor: Actor, params: Any) -> QuerySet[AuditEvent]:
    """The actor's organization's events matching `params` (a QueryDict or dict): actor (a user id or e-mail),
    action (exact, or a prefix ending in "."), object (target type, "type:id", or a name fragment),
    since / until (ISO date-times)."""
    actor.require("audit:read")
    qs = AuditEvent.objects.filter(organization=actor.organization)
    who = (params.get("actor") or "").strip()
    if who:
        qs = qs.filter(actor_id=int(who)) if digits_only(who) and len(who) < 18 else qs.filter(
            Q(actor__email__iexact=who) | Q(actor_label__iexact=who))
    action = (params.get("action") or "").strip()
    if action:
        qs = qs.filter(action__startswith=action) if action.endswith(".") else qs.filter(action=action)
    target = (params.get("object") or "").strip()
    if target:
        kind, sep, ident = target.partition(":")
        if sep:
            qs = qs.filter(target_type=kind, target_id=ident)
        else:
            qs = qs.filter(Q(target_type=target) | Q(target_name__icontains=target))
    if params.get("since"):
        qs = qs.filter(created_at__gte=_when(params["since"], "since"))
    if params.get("until"):
        qs = qs.filter(created_at__lt=_when(params["until"], "until"))
    return qs.select_related("actor")


def as_row(event: AuditEvent) -> dict[str, Any]:
    return {
        "id": event.pk,
        "created_at": event.created_at.isoformat(),
        "action": event.action,
        "actor_id": event.actor_id,
        "actor": event.actor.email if event.actor is not None else event.actor_label,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "target_name": event.target_name,
        "ip_address": event.ip_address,
        "details": event.details,
    }


def _newest_first(qs: QuerySet[AuditEvent]) -> Iterator[AuditEvent]:
    return qs.order_by("-created_at", "-id")[:EXPORT_LIMIT].iterator(chunk_size=EXPORT_BATCH)


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet shows as text: a leading = + - @ tab or CR would make it a formula (OWASP CSV
    injection), and target names and e-mails come from people."""
    text = json.dumps(value, sort_keys=True) if isinstance(value, dict) else "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_lines(qs: QuerySet[AuditEvent]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    for event in _newest_first(qs):
        row = as_row(event)
        writer.writerow([_cell(row[c]) for c in EXPORT_COLUMNS])
        if buffer.tell() > 64 * 1024:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def jsonl_lines(qs: QuerySet[AuditEvent]) -> Iterator[str]:
    for event in _newest_first(qs):
        yield json.dumps(as_row(event), sort_keys=True) + "\n"


def sign_in_failed(user: Any, *, reason: str, ip_address: str | None, method: str = "password") -> None:
    """A failed password sign-in (bad credentials, SSO required, a wrong second-step code) told to every
    organization the person belongs to: each one's audit trail shows attempts on its members."""
    from agenticos import audit
    from agenticos.models import Membership

    for membership in Membership.objects.filter(user=user).select_related("organization"):
        audit.record(actor=None, organization=membership.organization, action="signin.failed", target=user,
                     target_name=user.email, details={"method": method, "reason": reason},
                     ip_address=ip_address)
