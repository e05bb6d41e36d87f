"""allauth's adapters for this project: apps from each organization's `OidcConnection`, outbound HTTP through the
guard, and the organization's rules checked before allauth writes anything (user, e-mail, social account).

allauth supports both: `list_apps` may return unsaved `SocialApp`s (its settings-configured apps are), and
`pre_social_login` may abort with `ImmediateHttpResponse`.
"""

from __future__ import annotations

import logging
from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialApp, SocialLogin
from django.http import HttpRequest
from django.shortcuts import render

from agenticos import audit
from identity import saml, services
from identity.http import GuardedSession
from identity.models import OidcConnection
from identity.oidc import NONCE_STATE_KEY

logger = logging.getLogger(__name__)
PROVIDER = "openid_connect"
# Where pre_social_login leaves what the login receiver needs (identity.receivers).
SSO_STATE_KEY = "agenticos_sso"
# Set on the request of an SSO sign-in, so the password sign-in receiver leaves it to the SSO one.
SSO_REQUEST_FLAG = "_agenticos_sso"


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        # People join by invitation or through their organization's IdP (SocialAccountAdapter decides), never
        # by allauth's own sign-up form.
        return False


def _app_for(connection: OidcConnection, *, with_secret: bool) -> SocialApp:
    if connection.protocol == OidcConnection.SAML:
        # allauth finds a SAML app by its client_id (the "organization slug" of its URLs); the provider_id keeps
        # each organization's SocialAccount uids apart (two IdPs may both say NameID "ada").
        return SocialApp(provider=saml.PROVIDER, provider_id=connection.slug, client_id=connection.slug,
                         name=connection.display_name, settings=saml.app_settings(
                             entity_id=connection.saml_entity_id, sso_url=connection.saml_sso_url,
                             idp_cert=connection.saml_idp_cert, sp_cert=connection.saml_sp_cert,
                             sp_key=services.client_secret_of(connection) if with_secret else "",
                             verified_email=services.verified_domains(connection.organization)))
    return SocialApp(
        provider=PROVIDER,
        provider_id=connection.slug,
        name=connection.display_name,
        client_id=connection.client_id,
        secret=services.client_secret_of(connection) if with_secret else "",
        settings={
            "server_url": connection.issuer_url,
            "oauth_pkce_enabled": True,
            # The IdP vouches for addresses in the organization's verified domains only (pre_social_login
            # refuses the others before this matters).
            "verified_email": services.verified_domains(connection.organization),
        },
    )


def refusal(request: HttpRequest, message: str, status: int = 403) -> ImmediateHttpResponse:
    return ImmediateHttpResponse(render(request, "socialaccount/authentication_error.html",
                                        {"message": message}, status=status))


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def list_apps(self, request: HttpRequest | None, provider: str | None = None,
                  client_id: str | None = None) -> list[SocialApp]:
        connections = OidcConnection.objects.filter(enabled=True).select_related("organization")
        if provider == saml.PROVIDER:
            connections = connections.filter(protocol=OidcConnection.SAML)
            if client_id:  # one organization's SAML app, by the slug in its URLs
                return [_app_for(c, with_secret=True) for c in connections.filter(slug=client_id)[:1]]
            return [_app_for(c, with_secret=False) for c in connections]
        connections = connections.filter(protocol=OidcConnection.OIDC) if provider else connections
        if provider and provider != PROVIDER:
            # One organization's app, by its provider id: the only case that needs the client secret.
            connections = connections.filter(slug=provider)
            if client_id:
                connections = connections.filter(client_id=client_id)
            return [_app_for(c, with_secret=True) for c in connections[:1]]
        if client_id:
            connections = connections.filter(client_id=client_id)
        return [_app_for(c, with_secret=False) for c in connections]

    def get_requests_session(self) -> GuardedSession:
        return GuardedSession()

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return True  # only reached past pre_social_login's checks

    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        connection = OidcConnection.objects.select_related("organization").filter(
            slug=sociallogin.account.provider, enabled=True).first()
        email = (sociallogin.user.email or "") if sociallogin.user else ""
        try:
            if connection is None:
                raise services.SsoRefused("Single sign-on is not configured for this organization.")
            if sociallogin.state.get("process") != "login":
                raise services.SsoRefused("Single sign-on only signs in.")
            if connection.protocol == OidcConnection.SAML:
                # python3-saml checked the signature, audience, recipient, validity and InResponseTo (allauth
                # found the state it stashed for this request); the attributes are the claims.
                email = str(sociallogin.user.email or "").strip().lower() if sociallogin.user else ""
                claims = dict(sociallogin.account.extra_data or {})
            else:
                email, claims = self._oidc_claims(sociallogin)
            role = services.check_sign_in(connection, email, claims)
        except services.SsoRefused as exc:
            self._record_failure(request, connection, email, exc.message)
            raise refusal(request, exc.message) from None
        sociallogin.state[SSO_STATE_KEY] = {"connection": connection.pk, "role": role}
        setattr(request, SSO_REQUEST_FLAG, True)

    @staticmethod
    def _oidc_claims(sociallogin: SocialLogin) -> tuple[str, dict[str, Any]]:
        data = sociallogin.account.extra_data or {}
        id_token = data.get("id_token") or {}
        nonce = sociallogin.state.get(NONCE_STATE_KEY)
        if not id_token or not nonce or id_token.get("nonce") != nonce:
            raise services.SsoRefused("The identity provider's answer does not match this sign-in.")
        claims = {**id_token, **(data.get("userinfo") or {})}
        if claims.get("sub") != id_token.get("sub"):
            raise services.SsoRefused("The identity provider's answer does not match this sign-in.")
        return str(claims.get("email") or "").strip().lower(), claims

    def _record_failure(self, request: HttpRequest, connection: OidcConnection | None, email: str,
                        reason: str) -> None:
        audit.record(actor=None, organization=connection.organization if connection else None,
                     action="signin.failed", target_type="user", target_name=email[:300],
                     details={"method": "sso", "reason": reason[:200]}, ip_address=request.META.get("REMOTE_ADDR"))

    def on_authentication_error(self, request: HttpRequest, provider: Any, error: Any = None, exception: Any = None,
                                extra_context: Any = None) -> None:
        # Token from another issuer, wrong audience, expired, bad signature, replayed state: allauth refused it;
        # the organization's auditors see the attempt (the reason class, never the token).
        slug = getattr(getattr(provider, "app", None), "provider_id", "")
        connection = OidcConnection.objects.select_related("organization").filter(slug=slug).first() if slug else None
        reason = type(exception).__name__ if exception is not None else str(error or "unknown")
        self._record_failure(request, connection, "", f"provider error: {reason}")
        logger.info("SSO sign-in refused for %s: %s", slug or "?", reason)
        raise refusal(request, "The identity provider's answer could not be accepted. Try signing in again.")
