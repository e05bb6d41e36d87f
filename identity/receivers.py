"""Sign-in events: each success and failure is an audit row of the organizations concerned, the session is
recorded for its person's list of active sessions, and an SSO sign-in joins its organization (just in time)."""

from __future__ import annotations

from typing import Any

from allauth.account.signals import user_logged_in as allauth_logged_in
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest

from agenticos import audit, tenancy
from agenticos.models import Membership, User
from identity import audit_log, mfa, services, sessions
from identity.adapter import SSO_REQUEST_FLAG, SSO_STATE_KEY
from identity.models import OidcConnection


def _ip(request: HttpRequest | None) -> str | None:
    return request.META.get("REMOTE_ADDR") if request is not None else None


@receiver(allauth_logged_in, dispatch_uid="identity.sso_logged_in")
def sso_logged_in(sender: Any, request: HttpRequest, user: User, sociallogin: Any = None, **kwargs: Any) -> None:
    if sociallogin is None:
        return
    state = sociallogin.state.get(SSO_STATE_KEY) or {}
    connection_id = state.get("connection")
    connection = (OidcConnection.objects.select_related("organization").filter(pk=connection_id).first()
                  if connection_id else None)
    if connection is None:
        return
    membership = services.join_by_sso(user=user, connection=connection, claimed_role=state.get("role"),
                                      ip_address=_ip(request))
    audit.record(actor=user, organization=connection.organization, action="signin.succeeded", target=user,
                 target_name=user.email, details={"method": "sso", "role": membership.role}, ip_address=_ip(request))
    sessions.remember(request, user, method="sso", organization=connection.organization)
    request.session[tenancy.SESSION_KEY] = str(connection.organization.pk)  # the console opens there


@receiver(user_logged_in, dispatch_uid="identity.password_logged_in")
def password_logged_in(sender: Any, request: HttpRequest | None, user: User, **kwargs: Any) -> None:
    if request is None or getattr(request, SSO_REQUEST_FLAG, False):
        return
    method = "passkey" if getattr(request, mfa.PASSKEY_LOGIN_FLAG, False) else "password"
    for membership in Membership.objects.filter(user=user, is_suspended=False).select_related("organization"):
        audit.record(actor=user, organization=membership.organization, action="signin.succeeded", target=user,
                     target_name=user.email, details={"method": method}, ip_address=_ip(request))
    sessions.remember(request, user, method=method)


@receiver(user_login_failed, dispatch_uid="identity.password_failed")
def password_failed(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None,
                    **kwargs: Any) -> None:
    email = str(credentials.get("username") or credentials.get("email") or "").strip().lower()
    user = User.objects.filter(email=email).first() if email else None
    if user is None:
        return  # not someone of any organization: there is nobody to tell
    reason = "sso_required" if getattr(request, "sso_required", False) else "bad_credentials"
    audit_log.sign_in_failed(user, reason=reason, ip_address=_ip(request))


@receiver(user_logged_out, dispatch_uid="identity.logged_out")
def logged_out(sender: Any, request: HttpRequest | None, user: User | None, **kwargs: Any) -> None:
    if request is not None:
        sessions.forget(request, user)
