"""A session is one sign-in in one browser, able to act in each of the person's organizations. An owner's "sign out
everywhere" closes the member's sessions for THIS organization only: they keep working in their other ones (which
this owner does not govern), and a session left with no organization is signed out outright. Requiring SSO stops
the members' open password sessions in the organization at once (the break-glass owner's excepted)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from agenticos.models import AuditEvent, Membership
from identity import services
from identity import sessions as identity_sessions
from identity.models import ClosedSession, UserSession, VerifiedDomain
from tests import factories
from tests.identity.conftest import owner_actor, sso_sign_in

pytestmark = pytest.mark.django_db
PASSWORD = "pw-correct-horse-9"


def _signed_in(user) -> Client:
    client = Client()
    assert client.post("/login/", {"username": user.email, "password": PASSWORD, "next": ""}).status_code == 302
    return client


def _acts_in(client: Client, org) -> bool:
    """The session may act in `org`: the API answers for it when the request names it."""
    return client.get("/api/v1/roles", HTTP_X_ORGANIZATION_ID=str(org.pk)).status_code == 200


def test_an_owner_signs_a_member_out_of_this_organization_only(org, owner, outsider_org):
    member = factories.member(org, "member")
    Membership.objects.create(organization=outsider_org, user=member, role="member")
    laptop = _signed_in(member)
    boss = _signed_in(owner)
    membership = Membership.objects.get(organization=org, user=member)
    assert _acts_in(laptop, org) and _acts_in(laptop, outsider_org)

    assert boss.post(f"/settings/members/{membership.pk}/sign-out").status_code == 302

    assert not _acts_in(laptop, org)
    assert _acts_in(laptop, outsider_org)  # still signed in, for the organization this owner does not govern
    assert laptop.get("/settings/").status_code == 200  # the console opens in the organization left open
    assert UserSession.objects.filter(user=member).count() == 1
    assert ClosedSession.objects.filter(organization=org, reason="signed_out").count() == 1
    assert laptop.post("/organizations/switch/", {"organization": str(org.pk)}).status_code == 404
    assert AuditEvent.objects.filter(organization=org, action="session.signed_out_everywhere",
                                     details__sessions=1).exists()
    assert not AuditEvent.objects.filter(organization=outsider_org, action__startswith="session.").exists()


def test_signing_in_again_opens_the_organization_to_the_new_session(org, owner, outsider_org):
    member = factories.member(org, "member")
    Membership.objects.create(organization=outsider_org, user=member, role="member")
    old = _signed_in(member)
    membership = Membership.objects.get(organization=org, user=member)
    identity_sessions.sign_out_everywhere(actor=owner_actor(org, owner), membership=membership)
    assert not _acts_in(old, org)
    assert _acts_in(_signed_in(member), org)


def test_a_member_of_one_organization_is_signed_out_outright(org, owner, member):
    laptop = _signed_in(member)
    boss = _signed_in(owner)
    membership = Membership.objects.get(organization=org, user=member)
    boss.post(f"/settings/members/{membership.pk}/sign-out")
    assert laptop.get("/settings/").status_code == 302  # to the sign-in page
    assert not UserSession.objects.filter(user=member).exists() and not ClosedSession.objects.exists()


def test_another_organizations_owner_closes_the_shared_members_session_there_only(org, member, outsider_org,
                                                                                    outsider):
    """The member belongs to both; the other organization's owner signs them out there: here stays open."""
    Membership.objects.create(organization=outsider_org, user=member, role="member")
    laptop = _signed_in(member)
    theirs = Membership.objects.get(organization=outsider_org, user=member)
    assert _signed_in(outsider).post(f"/settings/members/{theirs.pk}/sign-out").status_code == 302
    assert _acts_in(laptop, org) and not _acts_in(laptop, outsider_org)


# ------------------------------------------------------------------ require SSO


def test_requiring_sso_stops_the_members_open_password_sessions(acme, outsider_org):
    org, owner, _ = acme
    grace = factories.member(org, "admin", email="grace@acme.com")
    Membership.objects.create(organization=outsider_org, user=grace, role="member")
    hopper = factories.member(org, "member", email="hopper@acme.com")
    grace_browser, hopper_browser, owner_browser = _signed_in(grace), _signed_in(hopper), _signed_in(owner)

    services.set_require_sso(actor=owner_actor(org, owner), require=True)

    assert not _acts_in(grace_browser, org) and _acts_in(grace_browser, outsider_org)
    assert hopper_browser.get("/settings/").status_code == 302  # nothing left open: signed out
    assert _acts_in(owner_browser, org)  # the break-glass owner
    event = AuditEvent.objects.get(organization=org, action="sso.require_changed")
    assert event.details["password_sessions_closed"] == 2


def test_an_sso_session_through_the_organizations_own_idp_keeps_working(acme, idp):
    org, owner, _ = acme
    client = Client()
    assert sso_sign_in(client).status_code == 302
    services.set_require_sso(actor=owner_actor(org, owner), require=True)
    assert _acts_in(client, org)
    assert UserSession.objects.get(session_key=client.session.session_key).organization_id == org.pk


def test_a_session_from_another_organizations_idp_cannot_act_where_sso_is_required(acme, idp):
    """Ada signs in through Acme's IdP; she is also a member of Globex, which requires SSO through its own."""
    org, _, _ = acme
    client = Client()
    assert sso_sign_in(client).status_code == 302
    globex = factories.organization(name="Globex")
    globex_owner = factories.member(globex, "owner", email="owner@globex.test")
    VerifiedDomain.objects.create(organization=globex, domain="globex.test", token="g", verified_at=timezone.now())
    services.configure_oidc(actor=owner_actor(globex, globex_owner), display_name="Globex SSO",
                            issuer_url=idp.issuer, client_id=idp.client_id, client_secret=idp.client_secret)
    ada = UserSession.objects.get(session_key=client.session.session_key).user
    Membership.objects.create(organization=globex, user=ada, role="member")
    assert _acts_in(client, globex)
    services.set_require_sso(actor=owner_actor(globex, globex_owner), require=True)
    assert not _acts_in(client, globex) and _acts_in(client, org)
