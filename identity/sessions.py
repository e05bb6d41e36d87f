"""A person's browser sessions: remembered at sign-in, listed, ended one by one or all at once, and closed for one
organization (identity.models.ClosedSession says what a session is here and why closing is per organization).

`session_gate` is what the kernel asks of every session request (agenticos.tenancy.register_session_gate): a
condition on the membership row, folded into the query that loads it, so it costs no extra query."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.http import HttpRequest
from django.utils import timezone

from agenticos import audit, session_sockets
from agenticos.errors import NotFound
from agenticos.models import Membership, Organization
from identity.models import ClosedSession, OidcConnection, UserSession

if TYPE_CHECKING:
    from agenticos.models import User
    from agenticos.tenancy import Actor


def session_gate(session_key: str) -> Q:
    """A membership row a session `session_key` may act through: not closed for that organization, and, where
    the organization requires SSO, signed in through its own identity provider (its break-glass owner excepted)
    — so an open password session, or one from another organization's IdP, stops the moment SSO is required."""
    closed = ClosedSession.objects.filter(session_key=session_key, organization=OuterRef("organization"))
    sso_only = OidcConnection.objects.filter(organization=OuterRef("organization"), enabled=True,
                                             require_sso=True).exclude(break_glass_user=OuterRef("user"))
    through_its_idp = UserSession.objects.filter(session_key=session_key, method="sso",
                                                 organization=OuterRef("organization"))
    return Q(~Exists(closed)) & (Q(~Exists(sso_only)) | Q(Exists(through_its_idp)))


def remember(request: HttpRequest, user: User, *, method: str, organization: Organization | None = None) -> None:
    """Called after django.contrib.auth.login, which has cycled the session key. `organization`: the one whose
    identity provider signed the person in (SSO)."""
    if not request.session.session_key:
        request.session.save()
    UserSession.objects.update_or_create(
        session_key=request.session.session_key,
        defaults={"user": user, "method": method, "organization": organization,
                  "ip_address": request.META.get("REMOTE_ADDR") or None,
                  "user_agent": (request.META.get("HTTP_USER_AGENT") or "")[:300], "created_at": timezone.now()},
    )


def forget(request: HttpRequest, user: Any = None) -> None:
    """The person signed out: the session's rows go, and its open sockets close."""
    key = request.session.session_key
    if key:
        UserSession.objects.filter(session_key=key).delete()
        ClosedSession.objects.filter(session_key=key).delete()
        if user is not None and user.pk is not None:
            session_sockets.end_sockets(user_id=user.pk, session_keys=[key])


def active_sessions(user: User) -> list[UserSession]:
    """The person's sessions that Django still holds (an expired or flushed one is left out)."""
    live = set(Session.objects.filter(expire_date__gt=timezone.now(),
                                      session_key__in=UserSession.objects.filter(user=user).values("session_key"))
               .values_list("session_key", flat=True))
    return [row for row in UserSession.objects.filter(user=user).select_related("organization")
            if row.session_key in live]


def _end(rows: list[UserSession]) -> int:
    """Sign the sessions out outright; their open sockets close with the commit (in every organization)."""
    keys = [row.session_key for row in rows]
    Session.objects.filter(session_key__in=keys).delete()
    UserSession.objects.filter(session_key__in=keys).delete()
    ClosedSession.objects.filter(session_key__in=keys).delete()
    for user_id in {row.user_id for row in rows}:
        session_sockets.end_sockets(user_id=user_id,
                                    session_keys=[row.session_key for row in rows if row.user_id == user_id])
    return len(keys)


def close_in_organization(rows: list[UserSession], organization: Organization, *, reason: str) -> int:
    """Close each session for `organization`; a session left open to none of its person's other organizations
    is ended outright (signed out). Returns how many sessions stopped acting in `organization`."""
    closed = 0
    for row in rows:
        others = Membership.objects.filter(user_id=row.user_id, is_suspended=False).exclude(
            organization=organization).filter(session_gate(row.session_key))
        if others.exists():
            ClosedSession.objects.get_or_create(session_key=row.session_key, organization=organization,
                                                defaults={"reason": reason})
            session_sockets.end_sockets(user_id=row.user_id, organization_id=organization.pk,
                                        session_keys=[row.session_key])
        else:
            _end([row])
        closed += 1
    return closed


def close_member(membership: Membership, *, reason: str, only_method: str | None = None) -> int:
    """Close every session of the member for the membership's organization (optionally only those signed in
    with `only_method`)."""
    rows = UserSession.objects.select_for_update().filter(user_id=membership.user_id)
    if only_method:
        rows = rows.filter(method=only_method)
    return close_in_organization(list(rows), membership.organization, reason=reason)


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
    """An owner ends every session of a member in this organization (a lost laptop, a departure); the member's
    sessions stay open for their other organizations, which this owner does not govern."""
    # Who may end someone's sessions is who controls sign-in: the owners.
    actor.require("signin:manage")
    if membership.organization_id != actor.organization.pk:
        raise NotFound("Member not found.")
    with transaction.atomic():
        ended = close_member(membership, reason="signed_out")
        audit.record(actor=actor.user, organization=actor.organization, action="session.signed_out_everywhere",
                     target=membership, target_name=membership.user.email, details={"sessions": ended},
                     ip_address=actor.extra.get("ip"))
    return ended


def close_password_sessions(organization: Organization, *, except_user_id: Any) -> int:
    """SSO became required: the members' open password sessions stop acting in the organization (the gate
    already refuses them; closing also signs out outright those left with no other organization)."""
    total = 0
    for membership in Membership.objects.filter(organization=organization).exclude(user_id=except_user_id):
        total += close_member(membership, reason="sso_required", only_method="password")
    return total
