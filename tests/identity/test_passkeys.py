"""Passkeys (WebAuthn, allauth's MFA over fido2) as a second factor, with a software authenticator speaking the
real ceremony (tests/fakes/webauthn_authenticator.py): a person adds, lists and removes their passkeys in Settings →
Two-factor; then a right password alone starts no session — a passkey's assertion over this session's challenge
does; an organization that requires two-factor accepts a passkey; a forged, replayed or foreign assertion is
refused; another person's passkey cannot be removed."""

from __future__ import annotations

import json

import pytest
from allauth.mfa.models import Authenticator
from django.test import Client

from agenticos.models import AuditEvent
from identity import mfa
from tests import factories
from tests.fakes.webauthn_authenticator import SoftAuthenticator
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db
PASSWORD = "pw-correct-horse-9"


HOST = "localhost"


@pytest.fixture(autouse=True)
def _localhost(settings):
    # WebAuthn needs a secure context: https, or http://localhost — so the test client is a browser at localhost
    # (fido2 keeps checking the origin against the RP id; allauth's ALLOW_INSECURE_ORIGIN would turn that off).
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, HOST]


def browser() -> Client:
    return Client(HTTP_HOST=HOST)


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def add_passkey(user, authenticator: SoftAuthenticator, name: str = "Laptop") -> Client:
    client = browser()
    client.force_login(user)
    options = client.post("/settings/two-factor/passkey-options")
    assert options.status_code == 200
    body = options.json()
    assert body["publicKey"]["rp"]["id"] == HOST
    credential = authenticator.create(body)
    done = client.post("/settings/two-factor/", {"action": "add_passkey", "name": name,
                                                 "credential": json.dumps(credential)})
    assert done.status_code == 200, done.content[:300]
    return client


def _password(client: Client, user) -> None:
    response = client.post("/login/", {"username": user.email, "password": PASSWORD, "next": ""})
    assert response.status_code == 302 and response["Location"].startswith("/login/two-factor/")


def _passkey_step(client: Client, authenticator: SoftAuthenticator, **bend):
    options = client.post("/login/two-factor/passkey-options")
    assert options.status_code == 200
    assertion = authenticator.get(options.json(), **bend)
    return client.post("/login/two-factor/", {"credential": json.dumps(assertion)}), assertion


def test_a_person_adds_lists_and_removes_a_passkey(org, member):
    authenticator = SoftAuthenticator()
    client = add_passkey(member, authenticator)
    row = Authenticator.objects.get(user=member, type="webauthn")
    assert mfa.recovery_codes(member)  # the first second factor brings recovery codes
    page = client.get("/settings/two-factor/")
    assert f'data-passkey="{row.pk}"'.encode() in page.content and b"Laptop" in page.content
    assert AuditEvent.objects.filter(organization=org, action="mfa.passkey_added").exists()
    assert client.post("/settings/two-factor/", {"action": "remove_passkey", "passkey": row.pk}).status_code == 302
    assert not Authenticator.objects.filter(user=member).exists()
    assert AuditEvent.objects.filter(organization=org, action="mfa.passkey_removed").exists()


def test_an_answer_to_another_challenge_or_origin_registers_nothing(org, member):
    client = browser()
    client.force_login(member)
    stale = client.post("/settings/two-factor/passkey-options").json()
    client.post("/settings/two-factor/passkey-options")  # a new challenge replaces it
    for credential in (SoftAuthenticator().create(stale),
                       SoftAuthenticator(origin="https://evil.example").create(
                           client.post("/settings/two-factor/passkey-options").json()),
                       {"id": "x"}):
        response = client.post("/settings/two-factor/", {"action": "add_passkey", "name": "x",
                                                         "credential": json.dumps(credential)})
        assert response.status_code == 422
    assert not Authenticator.objects.filter(user=member).exists()


def test_with_a_passkey_a_password_alone_starts_no_session_and_the_passkey_does(org, member):
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    client = browser()
    _password(client, member)
    assert not _signed_in(client)
    assert b"Use a passkey" in client.get("/login/two-factor/").content
    response, _ = _passkey_step(client, authenticator)
    assert response.status_code == 302 and _signed_in(client)
    assert Authenticator.objects.get(user=member, type="webauthn").last_used_at is not None


def test_a_replayed_foreign_or_misdirected_assertion_is_refused(org, member):
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    client = browser()
    _password(client, member)
    # Signed by a key the person never registered, under the registered credential id.
    impostor = SoftAuthenticator(credential_id=authenticator.credential_id)
    assert _passkey_step(client, impostor)[0].status_code == 422
    # For another website's RP id or origin.
    assert _passkey_step(client, authenticator, rp_id="evil.example")[0].status_code == 422
    assert _passkey_step(client, authenticator, origin="https://evil.example")[0].status_code == 422
    assert not _signed_in(client)
    ok, assertion = _passkey_step(client, authenticator)
    assert ok.status_code == 302
    # The same assertion again, in a new half signed-in session: its challenge is gone.
    again = browser()
    _password(again, member)
    assert again.post("/login/two-factor/", {"credential": json.dumps(assertion)}).status_code == 422
    assert not _signed_in(again)
    assert AuditEvent.objects.filter(organization=org, action="signin.failed",
                                     details__reason="mfa_code").count() == 4


def test_an_organization_requiring_two_factor_accepts_a_passkey(org, owner, member):
    mfa.set_required(actor=owner_actor(org, owner), required=True)
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    client = browser()
    _password(client, member)
    page = client.get("/login/two-factor/")
    assert b"data-totp-secret" not in page.content  # no TOTP enrolment forced: the passkey is the factor
    assert _passkey_step(client, authenticator)[0].status_code == 302 and _signed_in(client)
    # And the last factor stays while the organization requires it.
    row = Authenticator.objects.get(user=member, type="webauthn")
    settings_client = browser()
    settings_client.force_login(member)
    settings_client.post("/settings/two-factor/", {"action": "remove_passkey", "passkey": row.pk})
    assert Authenticator.objects.filter(pk=row.pk).exists()


def test_nobody_removes_or_uses_another_persons_passkey(org, member):
    add_passkey(member, SoftAuthenticator())
    row = Authenticator.objects.get(user=member, type="webauthn")
    for other in (factories.member(org, "owner"), factories.member(factories.organization(name="Outsider"), "owner")):
        client = browser()
        client.force_login(other)
        assert client.post("/settings/two-factor/", {"action": "remove_passkey", "passkey": row.pk}).status_code == 404
        assert f'data-passkey="{row.pk}"'.encode() not in client.get("/settings/two-factor/").content
    assert Authenticator.objects.filter(pk=row.pk).exists()


def test_passkey_options_need_a_pending_sign_in_or_a_session(org, member):
    assert browser().post("/login/two-factor/passkey-options").status_code == 404
    response = browser().post("/settings/two-factor/passkey-options")
    assert response.status_code == 302 and "/login/" in response["Location"]
