"""Signing in with a passkey alone (allauth's passkey login over fido2), with a software authenticator speaking the
real ceremony (tests/fakes/webauthn_authenticator.py): the sign-in page asks for a discoverable passkey without
naming any (nobody learns whether an e-mail has one), requires user verification, reads the person from the
assertion's user handle and checks the signature against that person's passkeys. Refused with nothing started: an
assertion without user verification, signed by another key, for another origin or RP id, replayed, carrying
another person's user handle, of a removed passkey or an inactive person — and a member of an organization that
requires SSO (its break-glass owner excepted)."""

from __future__ import annotations

import json

import pytest
from allauth.mfa.models import Authenticator
from django.test import Client

from agenticos.models import AuditEvent
from identity import services
from identity.models import UserSession
from tests import factories
from tests.fakes.webauthn_authenticator import SoftAuthenticator
from tests.identity.conftest import owner_actor
from tests.identity.test_passkeys import HOST, add_passkey, browser

pytestmark = pytest.mark.django_db
OPTIONS = "/login/passkey-options"
LOGIN = "/login/passkey"


@pytest.fixture(autouse=True)
def _localhost(settings):
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, HOST]


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def _passkey_sign_in(client: Client, authenticator: SoftAuthenticator, **bend):
    options = client.post(OPTIONS)
    assert options.status_code == 200
    assertion = authenticator.get(options.json(), **bend)
    return client.post(LOGIN, {"credential": json.dumps(assertion), "next": "/settings/"}), assertion


def test_a_person_signs_in_with_a_passkey_alone(org, member):
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    client = browser()
    page = client.get("/login/")
    assert b"Use a passkey" in page.content and b"data-passkey-login" in page.content
    options = client.post(OPTIONS).json()["publicKey"]
    assert not options.get("allowCredentials") and options["userVerification"] == "required"

    response, _ = _passkey_sign_in(client, authenticator)

    assert response.status_code == 302 and response["Location"] == "/settings/"
    assert _signed_in(client) and client.session["_auth_user_id"] == str(member.pk)
    assert UserSession.objects.filter(user=member, method="passkey").count() == 1
    assert AuditEvent.objects.filter(organization=org, action="signin.succeeded", details__method="passkey").exists()
    assert b"Passkey" in client.get("/settings/sessions/").content
    assert Authenticator.objects.get(user=member, type="webauthn").last_used_at is not None


def test_a_passkey_registered_in_settings_is_discoverable_and_verified(org, member):
    client = browser()
    client.force_login(member)
    selection = client.post("/settings/two-factor/passkey-options").json()["publicKey"]["authenticatorSelection"]
    assert selection["residentKey"] == "required" and selection["userVerification"] == "required"


def test_an_assertion_that_does_not_hold_starts_no_session(org, member, viewer):
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    theirs = SoftAuthenticator()
    add_passkey(viewer, theirs)
    client = browser()
    unverified = SoftAuthenticator(credential_id=authenticator.credential_id, user_handle=authenticator.user_handle,
                                   user_verified=False)
    unverified.key = authenticator.key
    impostor = SoftAuthenticator(credential_id=authenticator.credential_id, user_handle=authenticator.user_handle)
    # The member's own credential and key, claiming to be the viewer (their user handle).
    swapped = SoftAuthenticator(credential_id=authenticator.credential_id, user_handle=theirs.user_handle)
    swapped.key = authenticator.key
    for attempt, bend in ((unverified, {}), (impostor, {}), (swapped, {}), (authenticator, {"rp_id": "evil.example"}),
                          (authenticator, {"origin": "https://evil.example"})):
        response, _ = _passkey_sign_in(client, attempt, **bend)
        assert response.status_code == 302 and response["Location"] == "/login/"
        assert not _signed_in(client)
    assert client.post(LOGIN, {"credential": "not json"}).status_code == 302 and not _signed_in(client)
    ok, assertion = _passkey_sign_in(client, authenticator)
    assert _signed_in(client) and client.session["_auth_user_id"] == str(member.pk)
    # The same assertion in another browser: its challenge was this session's, and is used.
    again = browser()
    again.post(OPTIONS)
    assert again.post(LOGIN, {"credential": json.dumps(assertion)})["Location"] == "/login/"
    assert not _signed_in(again)
    assert not UserSession.objects.filter(method="passkey").exclude(user=member).exists()
    assert UserSession.objects.filter(user=member, method="passkey").count() == 1


def test_a_removed_passkey_or_an_inactive_person_signs_nobody_in(org, member):
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    member.is_active = False
    member.save(update_fields=["is_active"])
    assert not _signed_in(_passkey_sign_in(browser(), authenticator)[0].client)
    member.is_active = True
    member.save(update_fields=["is_active"])
    Authenticator.objects.filter(user=member, type="webauthn").delete()
    client = browser()
    _passkey_sign_in(client, authenticator)
    assert not _signed_in(client) and not UserSession.objects.filter(method="passkey").exists()


def test_an_organization_that_requires_sso_refuses_its_members_passkeys(acme):
    org, owner, _ = acme
    grace = factories.member(org, "admin", email="grace@acme.com")
    graces, owners = SoftAuthenticator(), SoftAuthenticator()
    add_passkey(grace, graces)
    add_passkey(owner, owners)
    services.set_require_sso(actor=owner_actor(org, owner), require=True, break_glass_user_id=owner.pk)

    client = browser()
    response, _ = _passkey_sign_in(client, graces)

    assert response["Location"] == "/login/" and not _signed_in(client)
    assert not UserSession.objects.filter(user=grace, method="passkey").exists()
    assert AuditEvent.objects.filter(organization=org, action="signin.failed", target_name="grace@acme.com",
                                     details__method="passkey", details__reason="sso_required").exists()
    glass = browser()
    _passkey_sign_in(glass, owners)  # the break-glass owner keeps a way in that does not need the IdP
    assert _signed_in(glass)


def test_with_passkey_sign_in_off_the_page_offers_none_and_the_routes_refuse(org, member, settings):
    settings.MFA_PASSKEY_LOGIN_ENABLED = False
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    client = browser()
    assert b"Use a passkey" not in client.get("/login/").content
    assert client.post(OPTIONS).status_code == 404
    assert client.post(LOGIN, {"credential": "{}"})["Location"] == "/login/" and not _signed_in(client)


def test_the_passkey_routes_take_only_a_post_of_this_site(org, member):
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    assert browser().get(OPTIONS).status_code == 405 and browser().get(LOGIN).status_code == 405
    forged = Client(HTTP_HOST=HOST, enforce_csrf_checks=True)  # another site's form posting here has no token
    assert forged.post(OPTIONS).status_code == 403
    assert forged.post(LOGIN, {"credential": "{}"}).status_code == 403
    assert not _signed_in(forged)
