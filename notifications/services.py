"""Notifications: written by the services that have something to tell someone, read by their recipient only.

Every read is the actor's own notifications in the actor's current organization: a member of two
organizations sees each one's in it, and nobody else's ever.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agenticos.errors import Invalid, NotFound
from agenticos.models import Membership
from agenticos.tenancy import Actor
from notifications.models import EmailPreference, Notification


def _inside(link: str) -> str:
    if link and (not link.startswith("/") or link[1:2] in ("/", "\\")):  # "//host" and "/\host" leave the site
        raise ValueError("A notification links inside the console only.")
    return link[:300]


def notify(*, organization: Any, recipient: Any, kind: str, text: str, link: str = "") -> Notification:
    """A new unread notification. `link` must be a path of this console ("/…", not "//…")."""
    notification = Notification.objects.create(organization=organization, recipient=recipient, kind=kind,
                                               text=text[:500], link=_inside(link))
    _email_after_commit([notification])
    return notification


def notify_each(*, organization_id: Any, recipient_ids: list[Any], kind: str, text: str, link: str = "") -> int:
    """The same notification for several people, in one statement; those who asked for this kind by e-mail
    also get one, sent by a task once the notifications are committed."""
    link = _inside(link)
    rows = [Notification(organization_id=organization_id, recipient_id=user_id, kind=kind, text=text[:500], link=link)
            for user_id in recipient_ids]
    created = Notification.objects.bulk_create(rows)
    _email_after_commit(created)
    return len(created)


def _email_after_commit(created: list[Notification]) -> None:
    """Queue the e-mail of those among `created` whose recipient asked for its kind by e-mail."""
    if not created:
        return
    first = created[0]
    by_email = set(wanting_email(first.organization_id, first.kind, [n.recipient_id for n in created]))
    ids = [str(n.pk) for n in created if n.recipient_id in by_email]
    if ids:
        from notifications.tasks import email_notifications

        transaction.on_commit(lambda: email_notifications.delay(ids))


# ------------------------------------------------------------------ e-mail


def email_kinds(actor: Actor) -> list[str]:
    """The kinds the actor also receives by e-mail in this organization."""
    if actor.user_id is None:
        return []
    row = EmailPreference.objects.filter(organization=actor.organization, user_id=actor.user_id).first()
    return list(row.kinds) if row is not None else []


def set_email_kinds(*, actor: Actor, kinds: list[str]) -> list[str]:
    """Which notifications the actor also wants by e-mail (unknown kinds refused)."""
    if actor.user_id is None:
        raise Invalid("Only a person receives e-mail.")
    known = set(Notification.Kind.values)
    unknown = [k for k in kinds if k not in known]
    if unknown:
        raise Invalid("Unknown kind of notification.", details={"field": "kinds", "unknown": unknown})
    wanted = sorted(set(kinds))
    EmailPreference.objects.update_or_create(organization=actor.organization, user_id=actor.user_id,
                                             defaults={"kinds": wanted, "updated_at": timezone.now()})
    return wanted


def wanting_email(organization_id: Any, kind: str, recipient_ids: list[Any]) -> list[Any]:
    """Of `recipient_ids`, who asked for `kind` by e-mail in this organization and has an address."""
    return list(EmailPreference.objects.filter(organization_id=organization_id, user_id__in=list(recipient_ids),
                                               kinds__contains=[kind], user__is_active=True)
                .exclude(user__email="").values_list("user_id", flat=True))


def send_emails(notification_ids: list[str]) -> int:
    """One e-mail per notification, to its recipient, through Django's mail backend (EMAIL_BACKEND). The text
    is the bell's and the link the console's, made absolute with FRONTEND_URL; a notification read meanwhile
    is not sent. A recipient who left the organization or stopped asking for e-mail is skipped."""
    from django.conf import settings
    from django.core.mail import send_mail

    rows = list(Notification.objects.filter(pk__in=notification_ids, read_at__isnull=True).select_related("recipient"))
    sent = 0
    for notification in rows:
        if notification.recipient_id not in wanting_email(notification.organization_id, notification.kind,
                                                          [notification.recipient_id]):
            continue
        if not Membership.objects.filter(organization_id=notification.organization_id,
                                         user_id=notification.recipient_id, is_suspended=False).exists():
            continue
        link = f"{settings.FRONTEND_URL}{notification.link}" if notification.link else settings.FRONTEND_URL
        body = f"{notification.text}\n\n{link}\n"
        sent += send_mail(subject=f"AgenticOS: {notification.text[:120]}", message=body,
                          from_email=None, recipient_list=[notification.recipient.email])
    return sent


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
