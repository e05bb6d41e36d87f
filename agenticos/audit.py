"""The one way to write an audit event. Call it inside the transaction of the change it records."""

from __future__ import annotations

from typing import Any

from agenticos.models import AuditEvent


def record(
    *,
    actor,
    organization,
    action: str,
    target: Any = None,
    target_type: str = "",
    target_id: str = "",
    target_name: str = "",
    details: dict | None = None,
    ip_address: str | None = None,
) -> AuditEvent:
    if target is not None:
        target_type = target_type or target._meta.model_name
        target_id = target_id or str(target.pk)
        target_name = target_name or str(getattr(target, "name", None) or target)
    return AuditEvent.objects.create(
        organization=organization,
        actor=actor if getattr(actor, "pk", None) else None,
        actor_label=str(actor) if actor is not None else "system",
        action=action,
        target_type=target_type,
        target_id=target_id,
        target_name=target_name[:300],
        details=details or {},
        ip_address=ip_address,
    )
