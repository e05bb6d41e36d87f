"""An organization with a verified domain and its IdP: the local OpenID Connect provider (tests/fakes)."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from django.utils import timezone

from agenticos.tenancy import Actor
from identity import services
from identity.models import VerifiedDomain
from tests import factories
from tests.fakes.oidc_provider import OidcProvider


@pytest.fixture(scope="module")
def idp_server():
    provider = OidcProvider().start()
    yield provider
    provider.stop()


@pytest.fixture
def idp(idp_server, settings):
    """The module's provider, reset for each test; the guard lets SSO reach it on loopback."""
    settings.SSO_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    idp_server.person = {"sub": "ada-1", "email": "ada@acme.com", "email_verified": True, "name": "Ada Lovelace"}
    idp_server.bend = {}
    idp_server.auto_approve = True
    idp_server.requests.clear()
    idp_server.token_requests.clear()
    return idp_server


def owner_actor(org, owner) -> Actor:
    return Actor(user=owner, organization=org, role="owner", extra={"ip": "127.0.0.1"})


@pytest.fixture
def acme(db, idp):
    """Acme (acme.com verified) with SSO through the local provider; its owner; and an outsider organization."""
    org = factories.organization(name="Acme")
    owner = factories.member(org, "owner", email="owner@acme.com")
    VerifiedDomain.objects.create(organization=org, domain="acme.com", token="t", verified_at=timezone.now())
    connection = services.configure_oidc(actor=owner_actor(org, owner), display_name="Acme SSO",
                                         issuer_url=idp.issuer, client_id=idp.client_id,
                                         client_secret=idp.client_secret)
    return org, owner, connection


def start_sso(client, email: str = "ada@acme.com"):
    """The sign-in page with an e-mail and no password: the redirect to the IdP."""
    response = client.post("/login/", {"username": email, "password": "", "next": ""})
    assert response.status_code == 302, response.content[:500]
    return response["Location"]


def through_idp(authorize_url: str) -> str:
    """The IdP's answer to the authorization request: the callback path with its code and state."""
    answer = httpx.get(authorize_url, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    parts = urlsplit(answer.headers["location"])
    return f"{parts.path}?{parts.query}"


def sso_sign_in(client, email: str = "ada@acme.com"):
    return client.get(through_idp(start_sso(client, email)))
