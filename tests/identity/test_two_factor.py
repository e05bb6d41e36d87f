"""Two-factor sign-in (allauth's TOTP and recovery codes): a person turns it on in Settings → Two-factor; then a
right password alone starts no session — a TOTP code does, once; a recovery code does, once; a wrong code is an
audited failure. An organization's owner may require it: a member without it enrols before the session starts.
The TOTP secret is sealed in the database."""

from __future__ import annotations

import time

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value
from django.test import Client

from agenticos.models import AuditEvent
from identity import mfa
from identity.models import SignInPolicy, UserSession
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db
PASSWORD = "pw-correct-horse-9"


@pytest.fixture(autouse=True)
def _one_period_either_side(settings):
    # A code made at the end of one 30-second period is still checked in the next (a loaded machine).
    settings.MFA_TOTP_TOLERANCE = 1


def code_for(secret: str) -> str:
    """What an authenticator app shows now (RFC 6238, allauth's own HOTP)."""
    return format_hotp_value(hotp_value(secret, int(time.time()) // 30))


def _password(client: Client, user) -> str:
    response = client.post("/login/", {"username": user.email, "password": PASSWORD, "next": ""})
    assert response.status_code == 302, response.content[:300]
    return response["Location"]


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def _enable(user) -> tuple[str, list[str]]:
    client = Client()
    client.force_login(user)
    page = client.get("/settings/two-factor/")
    assert page.status_code == 200 and b"data-totp-qr" in page.content
    secret = client.session["identity.mfa.enrol"]
    wrong = client.post("/settings/two-factor/", {"action": "enable", "code": "000000"})
    assert wrong.status_code == 422 and not mfa.has_totp(user)
    done = client.post("/settings/two-factor/", {"action": "enable", "code": code_for(secret)})
    assert done.status_code == 200 and b"data-recovery-codes" in done.content
    return secret, mfa.recovery_codes(user)


def test_with_two_factor_on_a_password_alone_starts_no_session(org, member, settings):
    secret, _ = _enable(member)
    assert AuditEvent.objects.filter(organization=org, action="mfa.enabled", actor=member).count() == 1
    row = Authenticator.objects.get(user=member, type="totp")
    assert secret not in str(row.data)  # sealed by the vault, not in the clear
    client = Client()
    assert _password(client, member) == "/login/two-factor/"
    assert not _signed_in(client)
    assert client.get("/settings/").status_code == 302  # not signed in yet
    wrong = client.post("/login/two-factor/", {"code": "123456"})
    assert wrong.status_code == 422 and not _signed_in(client)
    assert AuditEvent.objects.filter(organization=org, action="signin.failed", details__reason="mfa_code").exists()
    code = code_for(secret)
    assert client.post("/login/two-factor/", {"code": code}).status_code == 302
    assert _signed_in(client) and UserSession.objects.filter(user=member).count() == 2  # the settings client's too
    # The same code again, in another browser: used up.
    other = Client()
    _password(other, member)
    assert other.post("/login/two-factor/", {"code": code}).status_code == 422 and not _signed_in(other)


def test_a_recovery_code_signs_in_once(org, member):
    _, codes = _enable(member)
    first = Client()
    _password(first, member)
    assert first.post("/login/two-factor/", {"code": codes[0]}).status_code == 302 and _signed_in(first)
    again = Client()
    _password(again, member)
    assert again.post("/login/two-factor/", {"code": codes[0]}).status_code == 422 and not _signed_in(again)
    assert AuditEvent.objects.filter(organization=org, action="mfa.recovery_code_used").count() == 1


def test_the_second_step_without_a_right_password_is_nothing(org, member):
    _enable(member)
    client = Client()
    assert client.get("/login/two-factor/").status_code == 302  # no pending sign-in: back to the sign-in page
    client.post("/login/", {"username": member.email, "password": "wrong-password", "next": ""})
    assert client.post("/login/two-factor/", {"code": "123456"}).status_code == 302 and not _signed_in(client)


def test_an_organization_that_requires_it_makes_a_member_enrol_first(org, owner, member):
    mfa.set_required(actor=owner_actor(org, owner), required=True)
    assert AuditEvent.objects.filter(organization=org, action="sso.require_mfa_changed").exists()
    client = Client()
    assert _password(client, member) == "/login/two-factor/"
    page = client.get("/login/two-factor/")
    assert b"data-totp-secret" in page.content and not _signed_in(client)
    secret = client.session[mfa.PENDING_KEY]["secret"]
    assert client.post("/login/two-factor/", {"code": code_for(secret)}).status_code == 302
    assert _signed_in(client) and mfa.has_totp(member)
    # It cannot be turned off while required.
    client.post("/settings/two-factor/", {"action": "disable"})
    assert mfa.has_totp(member)


@pytest.mark.parametrize("role", ["admin", "member", "viewer"])
def test_only_owners_require_it(org, role):
    from tests import factories

    person = factories.member(org, role)
    client = Client()
    client.force_login(person)
    client.post("/settings/two-factor/", {"action": "policy", "require_mfa": "on"})
    assert not SignInPolicy.objects.filter(organization=org, require_mfa=True).exists()


def test_another_organizations_requirement_does_not_reach_this_one(org, member, outsider, outsider_org):
    mfa.set_required(actor=owner_actor(outsider_org, outsider), required=True)
    client = Client()
    assert _password(client, member) == "/"
    assert _signed_in(client)


def test_turning_it_off(org, member):
    _enable(member)
    client = Client()
    client.force_login(member)
    client.post("/settings/two-factor/", {"action": "disable"})
    assert not Authenticator.objects.filter(user=member).exists()
    assert AuditEvent.objects.filter(organization=org, action="mfa.disabled").exists()
    assert _password(Client(), member) == "/"
