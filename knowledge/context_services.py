"""Context files: a library a person writes and binds to agents by id (`AgentSpec.context_ids`)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Conflict
from agenticos.tenancy import Actor
from knowledge.models import ContextFile


def create_context_file(*, actor: Actor, name: str, body: str = "", description: str = "",
                        format: str = "markdown", mode: str = "inject") -> ContextFile:
    with transaction.atomic():
        if ContextFile.objects.filter(organization=actor.organization, name=name).exists():
            raise Conflict("A context file with this name already exists.", details={"field": "name"})
        item = ContextFile.objects.create(organization=actor.organization, name=name, body=body,
                                          description=description, format=format, mode=mode, created_by=actor.user)
        audit.record(actor=actor.user, organization=actor.organization, action="context.create", target=item,
                     ip_address=actor.extra.get("ip"))
    return item


def update_context_file(*, actor: Actor, item: ContextFile, **changes) -> ContextFile:
    with transaction.atomic():
        if "name" in changes and changes["name"] != item.name and ContextFile.objects.filter(
                organization=actor.organization, name=changes["name"]).exists():
            raise Conflict("A context file with this name already exists.", details={"field": "name"})
        for field in ("name", "body", "description", "format", "mode"):
            if field in changes:
                setattr(item, field, changes[field])
        item.updated_at = timezone.now()
        item.save()
        audit.record(actor=actor.user, organization=actor.organization, action="context.update", target=item,
                     details={"fields": sorted(changes)}, ip_address=actor.extra.get("ip"))
    return item


def delete_context_file(*, actor: Actor, item: ContextFile) -> None:
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="context.delete", target=item,
                     ip_address=actor.extra.get("ip"))
        item.delete()
