"""A person's browser sessions: remembered at sign-in, listed, ended one by one or all at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.sessions.models import Session
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from agenticos import audit
from agenticos.errors import NotFound
from identity.models import UserSession

if TYPE_CHECKING:
    from agenticos.models import Membership, User
    from agenticos.tenancy import Actor


def remember(request: HttpRequest, user: User, *, method: str) -> None:
    """Called after django.contrib.auth.login, which has cycled the session key."""
    if not request.session.session_key:
        request.session.save()
    UserSession.objects.update_or_create(
        session_key=request.session.session_key,
        defaults={"user": user, "method": method, "ip_address": request.META.get("REMOTE_ADDR") or None,
                  "user_agent": (request.META.get("HTTP_USER_AGENT") or "")[:300], "created_at": timezone.now()},
    )


def forget(request: HttpRequest) -> None:
    if request.session.session_key:
        UserSession.objects.filter(session_key=request.session.session_key).delete()


def active_sessions(user: User) -> list[UserSession]:
    """The person's sessions that Django still holds (an expired or flushed one is left out)."""
    live = set(Session.objects.filter(expire_date__gt=timezone.now(),
                                      session_key__in=UserSession.objects.filter(user=user).values("session_key"))
               .values_list("session_key", flat=True))
    return [row for row in UserSession.objects.filter(user=user) if row.session_key in live]


def _end(rows: list[UserSession]) -> int:
    keys = [row.session_key for row in rows]
    Session.objects.filter(session_key__in=keys).delete()
    UserSession.objects.filter(session_key__in=keys).delete()
    return len(keys)


def sign_out_others(*, actor: Actor, current_key: str | None) -> int:
    with transaction.atomic():
        rows = [row for row in UserSession.objects.select_for_update().filter(user=actor.user)
                if row.session_key != current_key]
        ended = _end(rows)
        audit.record(actor=actor.user, organization=actor.organization, action="session.signed_out_others",
                     target=actor.user, target_name=actor.user.email if actor.user else "",
                     details={"sessions": ended}, ip_address=actor.extra.get("ip"))
    return ended


def sign_out_session(*, actor: Actor, session_id: int) -> None:
    with transaction.atomic():
        row = UserSession.objects.select_for_update().filter(user=actor.user, pk=session_id).first()
        if row is None:
            raise NotFound("Session not found.")
        _end([row])
        audit.record(actor=actor.user, organization=actor.organization, action="session.signed_out",
                     target=actor.user, target_name=actor.user.email if actor.user else "",
                     details={"session": session_id}, ip_address=actor.extra.get("ip"))


def sign_out_everywhere(*, actor: Actor, membership: Membership) -> int:
    """An owner ends every session of a member of the organization (a lost laptop, a departure)."""
    # Who may end someone's sessions is who controls sign-in: the owners.
    actor.require("signin:manage")
    if membership.organization_id != actor.organization.pk:
        raise NotFound("Member not found.")
    with transaction.atomic():
        ended = _end(list(UserSession.objects.select_for_update().filter(user_id=membership.user_id)))
        audit.record(actor=actor.user, organization=actor.organization, action="session.signed_out_everywhere",
                     target=membership, target_name=membership.user.email, details={"sessions": ended},
                     ip_address=actor.extra.get("ip"))
    return ended
