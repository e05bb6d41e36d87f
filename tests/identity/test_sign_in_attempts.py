"""Sign-in attempts are counted per address and per person (identity.attempts, in the shared Redis): past
SIGNIN_ATTEMPTS_PER_MINUTE the next attempt — a passkey alone, a passkey challenge, a password, a second-step code
or passkey — is refused with 429, Retry-After and a message saying so, before anything is checked: no session,
no failed-sign-in event, no challenge minted."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from agenticos.models import AuditEvent
from tests import factories
from tests.fakes.webauthn_authenticator import SoftAuthenticator
from tests.identity.test_passkeys import HOST, add_passkey, browser
from tests.identity.test_two_factor import PASSWORD, _enable, code_for

pytestmark = pytest.mark.django_db
LIMIT = 3


@pytest.fixture(autouse=True)
def _small_limit(settings):
    settings.SIGNIN_ATTEMPTS_PER_MINUTE = LIMIT
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, HOST]


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def _failures() -> int:
    return AuditEvent.objects.filter(action="signin.failed").count()


def test_the_passkey_challenge_past_the_limit_is_refused_with_the_error_envelope(org, member):
    client = browser()
    for _ in range(LIMIT):
        assert client.post("/login/passkey-options").status_code == 200
    refused = client.post("/login/passkey-options")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    error = refused.json()["error"]
    assert error["code"] == "rate_limited" and error["message"].startswith("Too many sign-in attempts")
    assert "publicKey" not in refused.json()
    # Another address has its own count.
    assert browser().post("/login/passkey-options", REMOTE_ADDR="10.0.0.9").status_code == 200


def test_a_passkey_sign_in_past_the_limit_is_refused_before_the_assertion_is_checked(org, member):
    authenticator = SoftAuthenticator()
    add_passkey(member, authenticator)
    client = browser()
    good = authenticator.get(client.post("/login/passkey-options").json())  # a valid assertion for this session
    for _ in range(LIMIT):
        assert client.post("/login/passkey", {"credential": "{}"}).status_code == 302
    before = _failures()
    refused = client.post("/login/passkey", {"credential": json.dumps(good)})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert b"data-refused" in refused.content and b"Too many sign-in attempts" in refused.content
    assert not _signed_in(client) and _failures() == before


def test_the_second_steps_passkey_challenge_and_code_are_limited_per_person(org, member):
    secret, _ = _enable(member)
    add_passkey(member, SoftAuthenticator())
    client = browser()
    assert client.post("/login/", {"username": member.email, "password": PASSWORD}).status_code == 302
    for _ in range(LIMIT):
        assert client.post("/login/two-factor/passkey-options").status_code == 200
    assert client.post("/login/two-factor/passkey-options").status_code == 429
    for _ in range(LIMIT):
        assert client.post("/login/two-factor/", {"code": "000000"}).status_code == 422
    before = _failures()
    refused = client.post("/login/two-factor/", {"code": code_for(secret)})  # the right code, too late
    assert refused.status_code == 429 and b"Too many sign-in attempts" in refused.content
    assert not _signed_in(client) and _failures() == before
    # The same person from another address: the per-person count still refuses.
    elsewhere = browser()
    assert elsewhere.post("/login/", {"username": member.email, "password": PASSWORD},
                          REMOTE_ADDR="10.0.0.7").status_code == 302
    assert elsewhere.post("/login/two-factor/", {"code": code_for(secret)}, REMOTE_ADDR="10.0.0.7").status_code == 429


def test_passwords_past_the_limit_are_refused_without_being_checked(org, member):
    client = Client()
    for _ in range(LIMIT):
        assert client.post("/login/", {"username": member.email, "password": "wrong-pw-123"}).status_code == 200
    before = _failures()
    refused = client.post("/login/", {"username": member.email, "password": PASSWORD})
    assert refused.status_code == 429 and b"data-refused" in refused.content
    assert b"Too many sign-in attempts" in refused.content
    assert not _signed_in(client) and _failures() == before
    # Someone else from another address is not held back by it.
    other = factories.member(org)
    assert Client().post("/login/", {"username": other.email, "password": PASSWORD},
                         REMOTE_ADDR="10.0.0.8").status_code == 302
