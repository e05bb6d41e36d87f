"""Require SSO: a member's password is refused (on the sign-in page, by the backend for every password path) and
the page sends them to the IdP; the break-glass owner keeps password sign-in; another organization's members are
untouched. Failed and successful sign-ins are audit events of the organization."""

from __future__ import annotations

import pytest
from django.contrib.auth import authenticate
from django.test import Client, RequestFactory

from agenticos.errors import Conflict, Invalid
from agenticos.models import AuditEvent
from identity import services
from tests import factories
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db
PASSWORD = "pw-correct-horse-9"


@pytest.fixture
def required(acme):
    org, owner, _ = acme
    services.set_require_sso(actor=owner_actor(org, owner), require=True)
    return acme


def test_a_members_correct_password_is_refused_and_they_go_to_the_idp(required, idp):
    org, _, _ = required
    factories.member(org, "admin", email="grace@acme.com")
    response = Client().post("/login/", {"username": "grace@acme.com", "password": PASSWORD, "next": ""})
    assert response.status_code == 302 and response["Location"].startswith(f"{idp.issuer}/authorize")
    assert authenticate(RequestFactory().post("/login/"), username="grace@acme.com", password=PASSWORD) is None
    assert AuditEvent.objects.filter(organization=org, action="signin.failed",
                                     details__reason="sso_required").exists()


def test_a_member_outside_the_domain_is_refused_a_password_too(required):
    org, _, _ = required
    factories.member(org, "member", email="contractor@example.com")
    response = Client().post("/login/", {"username": "contractor@example.com", "password": PASSWORD, "next": ""})
    assert response.status_code == 200
    assert b"signs in with single sign-on" in response.content
    assert "_auth_user_id" not in response.client.session


def test_the_admin_login_obeys_it_too(required):
    org, _, _ = required
    factories.member(org, "admin", email="staff@acme.com", is_staff=True)
    response = Client().post("/admin/login/", {"username": "staff@acme.com", "password": PASSWORD})
    assert response.status_code == 200 and "_auth_user_id" not in response.client.session


def test_the_break_glass_owner_keeps_password_sign_in(required):
    org, owner, connection = required
    connection.refresh_from_db()
    assert connection.break_glass_user_id == owner.pk
    client = Client()
    response = client.post("/login/", {"username": "owner@acme.com", "password": PASSWORD, "next": ""})
    assert response.status_code == 302 and response["Location"] == "/"
    assert AuditEvent.objects.filter(organization=org, action="signin.succeeded", details__method="password").exists()


def test_another_organizations_members_keep_their_passwords(required, outsider):
    client = Client()
    response = client.post("/login/", {"username": outsider.email, "password": PASSWORD, "next": ""})
    assert response.status_code == 302


def test_require_needs_an_owner_as_break_glass_and_a_verified_domain(acme, idp):
    org, owner, _ = acme
    admin = factories.member(org, "admin")
    with pytest.raises(Invalid):
        services.set_require_sso(actor=owner_actor(org, owner), require=True, break_glass_user_id=admin.pk)
    org.sign_in_domains.all().delete()
    with pytest.raises(Conflict):
        services.set_require_sso(actor=owner_actor(org, owner), require=True)
    assert not org.oidc_connection.require_sso


def test_a_wrong_password_is_an_audited_failed_sign_in(acme):
    org, _, _ = acme
    response = Client().post("/login/", {"username": "owner@acme.com", "password": "nope-wrong", "next": ""})
    assert response.status_code == 200
    event = AuditEvent.objects.get(organization=org, action="signin.failed")
    assert event.details == {"method": "password", "reason": "bad_credentials"}
    assert "nope-wrong" not in str(event.details)
