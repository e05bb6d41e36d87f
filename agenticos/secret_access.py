"""Secret access is an audit event (`secret.used`): every `vault.reveal` of a Secret row is noted here — the
secret's id and name, never its value — without a database round trip of its own on the hot path.

- Inside a run, the runner opens a `run_scope` for the execution (a context variable: it follows the run's
  asyncio tasks and, because the runner's DB threads run each piece of work in a copy of the caller's context,
  its DB threads). Uses are kept once per (secret, run), with a count, and go into the database as rows of the
  run's own next write (the ledger write of a step, the parking, the ending: `pending_rows`), in the same
  statement. A run that opens secrets makes no extra statement.
- Outside a run (a channel bot's token, a webhook trigger's signing key, an embed's JWT secret, a connection's
  token), the use goes into a per-process buffer, merged per secret, and is written in one INSERT: after the
  commit of the transaction it happened in (`on_commit`), right away in a sync thread outside a transaction, and
  from a worker thread when it happened on an event loop (never a synchronous write on the loop). A use whose
  row cannot be written (its organization deleted meanwhile, the database gone) is logged, never raised into
  the caller: a secret that opened must not make the work that needed it fail.

Hand-written: django-auditlog and django-simple-history record model changes, not reads of a field.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from agenticos.models import AuditEvent, Organization

logger = logging.getLogger(__name__)

ACTION = "secret.used"


@dataclass
class _Use:
    organization_id: Any
    target_type: str
    target_id: str
    name: str
    kind: str
    first_at: datetime
    count: int = 1


@dataclass
class RunUses:
    """One run's secret uses, merged per secret. Shared by the run's threads: changed under its lock."""

    run_id: Any
    uses: dict[Any, _Use] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, secret: Any) -> None:
        with self.lock:
            _merge(self.uses, secret)

    def take(self) -> dict[Any, _Use]:
        with self.lock:
            taken, self.uses = self.uses, {}
        return taken


_run: ContextVar[RunUses | None] = ContextVar("agenticos_secret_uses", default=None)
_buffer: dict[Any, _Use] = {}
_buffer_lock = threading.Lock()


def _merge(uses: dict[Any, _Use], secret: Any) -> None:
    # vault.reveal opens Secret rows and rows that keep their own sealed value (a bot's credential): each is
    # recorded under its own type, named as its row names itself.
    target_type = "secret" if secret._meta.model_name == "secret" else secret._meta.model_name
    key = (target_type, secret.pk)
    use = uses.get(key)
    if use is None:
        uses[key] = _Use(secret.organization_id, target_type, str(secret.pk),
                         str(getattr(secret, "name", "") or getattr(secret, "display_name", "") or secret),
                         str(getattr(secret, "kind", "") or ""),
                         timezone.now())
    else:
        use.count += 1


@contextmanager
def run_scope(run_id: Any) -> Iterator[RunUses]:
    """The secret uses of the run executing in this context (see the module's docstring)."""
    uses = RunUses(run_id)
    token = _run.set(uses)
    try:
        yield uses
    finally:
        _run.reset(token)


def note(secret: Any) -> None:
    """A Secret row was opened. Cheap: no database work here, and none on an event loop."""
    uses = _run.get()
    if uses is not None:
        uses.add(secret)
        return
    with _buffer_lock:
        _merge(_buffer, secret)
    _flush_soon()


def release(uses: RunUses) -> None:
    """The uses of a run scope whose run never came to be (a voice call refused after it opened the realtime key)
    are written as uses outside a run: a secret that opened is always in the audit log."""
    taken = uses.take()
    if not taken:
        return
    with _buffer_lock:
        for key, use in taken.items():
            kept = _buffer.get(key)
            if kept is None:
                _buffer[key] = use
            else:
                kept.count += use.count
    _flush_soon()


def _flush_soon() -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        loop.run_in_executor(None, _flush_in_worker)
    elif connection.in_atomic_block:
        transaction.on_commit(flush)
    else:
        flush()


def pending_rows(uses: RunUses, *, organization_id: Any, user_id: Any, api_key_id: Any,
                 surface: str) -> list[AuditEvent]:
    """The audit rows of `uses` not yet written (taken: they count as written from here on), for the run's
    own next statement. The actor is the run's person (or its API key / visitor, named in the label)."""
    label = f"{surface} run" + (" (API key)" if api_key_id else "")
    return [
        AuditEvent(organization_id=use.organization_id, actor_id=user_id, actor_label=label, action=ACTION,
                   target_type=use.target_type, target_id=use.target_id, target_name=use.name[:300],
                   details={"kind": use.kind, "run": str(uses.run_id), "uses": use.count,
                            **({"run_organization": str(organization_id)}
                               if str(organization_id) != str(use.organization_id) else {})},
                   created_at=use.first_at)
        for use in uses.take().values()
    ]


def flush() -> int:
    """Write the buffered uses made outside a run in one INSERT. Returns how many rows were written."""
    with _buffer_lock:
        taken = dict(_buffer)
        _buffer.clear()
    if not taken:
        return 0
    rows = [AuditEvent(organization_id=use.organization_id, actor_label="system", action=ACTION,
                       target_type=use.target_type, target_id=use.target_id, target_name=use.name[:300],
                       details={"kind": use.kind, "uses": use.count}, created_at=use.first_at)
            for use in taken.values()]
    # A use whose organization went since (deleted, or a test's rolled back) is dropped, not allowed to fail the
    # whole INSERT and lose the others with it.
    alive = set(Organization.objects.filter(pk__in={r.organization_id for r in rows}).values_list("pk", flat=True))
    gone = [r for r in rows if r.organization_id not in alive]
    if gone:
        logger.warning("could not record the use of %d secret(s) in the audit log: organization gone", len(gone))
    rows = [r for r in rows if r.organization_id in alive]
    if not rows:
        return 0
    try:
        with transaction.atomic():
            AuditEvent.objects.bulk_create(rows)
    except DatabaseError:
        logger.warning("could not record the use of %d secret(s) in the audit log", len(rows), exc_info=True)
        return 0
    return len(rows)


def _flush_in_worker() -> None:
    try:
        flush()
    finally:
        # A worker thread of the loop's default executor: do not leave a connection open on it.
        if not connection.in_atomic_block:
            connection.close()
