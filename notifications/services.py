"""Notifications: written by the services that have something to tell someone, read by their recipient only.

Every read is the actor's own notifications in the actor's current organization: a member of two
organizations sees each one's in it, and nobody else's ever.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from agenticos.errors import NotFound
from agenticos.tenancy import Actor
from notifications.models import Notification


def _inside(link: str) -> str:
    if link and (not link.startswith("/") or link[1:2] in ("/", "\\")):  # "//host" and "/\host" leave the site
        raise ValueError("A notification links inside the console only.")
    return link[:300]


def notify(*, organization: Any, recipient: Any, kind: str, text: str, link: str = "") -> Notification:
    """A new unread notification. `link` must be a path of this console ("/…", not "//…")."""
    return Notification.objects.create(organization=organization, recipient=recipient, kind=kind,
                                       text=text[:500], link=_inside(link))


def notify_each(*, organization_id: Any, recipient_ids: list[Any], kind: str, text: str, link: str = "") -> int:
    """The same notification for several people, in one statement."""
    link = _inside(link)
    rows = [Notification(organization_id=organization_id, recipient_id=user_id, kind=kind, text=text[:500], link=link)
            for user_id in recipient_ids]
    return len(Notification.objects.bulk_create(rows))


def mine(actor: Actor) -> QuerySet[Notification]:
    if actor.user_id is None:  # an API key acting without a person has no notifications
        return Notification.objects.none()
    return Notification.objects.filter(organization=actor.organization, recipient_id=actor.user_id)


def unread_count(actor: Actor) -> int:
    return mine(actor).filter(read_at__isnull=True).count()


def mark_read(*, actor: Actor, notification_id: Any) -> Notification:
    """Mark one of the actor's notifications read (404 for anyone else's, as for one that does not exist)."""
    from agenticos.tenancy import parse_uuid

    wanted = parse_uuid(notification_id)
    found = mine(actor).filter(pk=wanted).first() if wanted is not None else None
    if found is None:
        raise NotFound("Notification not found.")
    if found.read_at is None:
        found.read_at = timezone.now()
        Notification.objects.filter(pk=found.pk, read_at__isnull=True).update(read_at=found.read_at)
    return found


def mark_all_read(*, actor: Actor) -> int:
    return mine(actor).filter(read_at__isnull=True).update(read_at=timezone.now())
