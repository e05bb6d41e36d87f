"""allauth's `openid_connect` provider, with what an organization's sign-in needs on top of it.

Installed in its place by `SOCIALACCOUNT_PROVIDERS["openid_connect"]["provider_class"]` (allauth's own switch),
so the provider id, the URLs and the whole flow (state, PKCE, code exchange, discovery, JWKS, iss/aud/exp checks,
the `jti` replay list) stay allauth's. Added here, each for a reason allauth leaves open:

- a `nonce` in every authorization request, kept in allauth's state and compared with the ID token's
  (`identity.adapter.SocialAccountAdapter.pre_social_login`): allauth's OIDC sends none;
- the ID token's signature always checked against the issuer's JWKS: allauth skips it when the token came
  straight from the token endpoint (OIDC Core 3.1.3.7 allows that over TLS), but an organization may point at an
  IdP the operator allowed over plain http inside its network, and one check more costs one JWKS fetch.
"""

from __future__ import annotations

import secrets
from typing import Any

from allauth.account.internal.decorators import login_not_required
from allauth.socialaccount.internal import jwtkit
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from django.http import Http404, HttpRequest, HttpResponse

NONCE_STATE_KEY = "oidc_nonce"


class VerifyingOIDCAdapter(OpenIDConnectOAuth2Adapter):
    def _decode_id_token(self, app: Any, id_token: str) -> dict:
        return jwtkit.verify_and_decode(
            credential=id_token,
            keys_url=self.openid_config["jwks_uri"],
            issuer=self.openid_config["issuer"],
            audience=app.client_id,
            lookup_kid=jwtkit.lookup_kid_jwk,
            verify_signature=True,
        )


class OrganizationOIDCProvider(OpenIDConnectProvider):
    oauth2_adapter_class = VerifyingOIDCAdapter

    def redirect(self, request: Any, process: Any, next_url: Any = None, data: Any = None, **kwargs: Any):
        nonce = secrets.token_urlsafe(24)
        auth_params = kwargs.pop("auth_params", None)
        if auth_params is None:
            auth_params = self.get_auth_params()
        kwargs[NONCE_STATE_KEY] = nonce  # kept with allauth's state (the session), popped at the callback
        return super().redirect(request, process, next_url, data, auth_params={**auth_params, "nonce": nonce},
                                **kwargs)


# allauth's `openid_connect` views build `OpenIDConnectOAuth2Adapter` by name, not from the provider class, so the
# routes are allauth's views over the adapter above (same paths, same URL names).
@login_not_required
def login(request: HttpRequest, provider_id: str) -> HttpResponse:
    try:
        return OAuth2LoginView.adapter_view(VerifyingOIDCAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist:
        raise Http404 from None


@login_not_required
def callback(request: HttpRequest, provider_id: str) -> HttpResponse:
    try:
        return OAuth2CallbackView.adapter_view(VerifyingOIDCAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist:
        raise Http404 from None
