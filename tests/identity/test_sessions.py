"""Settings → Sessions: a person lists their sessions and signs the others out; an owner signs a member out
everywhere; nobody ends another person's session by id; weaker roles and outsiders cannot sign anyone out."""

from __future__ import annotations

import pytest
from django.test import Client

from agenticos.models import AuditEvent, Membership
from identity.models import UserSession

pytestmark = pytest.mark.django_db
PASSWORD = "pw-correct-horse-9"


def _signed_in(user) -> Client:
    client = Client()
    assert client.post("/login/", {"username": user.email, "password": PASSWORD, "next": ""}).status_code == 302
    return client


def _is_signed_in(client: Client) -> bool:
    return client.get("/settings/").status_code == 200


def test_a_person_sees_their_sessions_and_signs_the_others_out(org, member, viewer):
    laptop, phone, tablet = _signed_in(member), _signed_in(member), _signed_in(member)
    theirs = _signed_in(viewer)
    page = laptop.get("/settings/sessions/")
    assert page.status_code == 200 and page.content.count(b"data-session=") == 3
    assert laptop.post("/settings/sessions/sign-out").status_code == 302
    assert _is_signed_in(laptop) and not _is_signed_in(phone) and not _is_signed_in(tablet)
    assert _is_signed_in(theirs)
    assert UserSession.objects.filter(user=member).count() == 1
    assert AuditEvent.objects.filter(action="session.signed_out_others", details__sessions=2).exists()


def test_a_person_signs_out_one_session_but_never_someone_elses(org, member, viewer):
    laptop, phone = _signed_in(member), _signed_in(member)
    theirs = _signed_in(viewer)
    other_row = UserSession.objects.get(user=viewer)
    assert laptop.post("/settings/sessions/sign-out", {"session": other_row.pk}).status_code == 404
    assert _is_signed_in(theirs)
    phone_row = UserSession.objects.get(user=member, session_key=phone.session.session_key)
    laptop.post("/settings/sessions/sign-out", {"session": phone_row.pk})
    assert not _is_signed_in(phone) and _is_signed_in(laptop)


def test_an_owner_signs_a_member_out_everywhere(org, owner, member):
    a, b = _signed_in(member), _signed_in(member)
    boss = _signed_in(owner)
    membership = Membership.objects.get(organization=org, user=member)
    assert boss.post(f"/settings/members/{membership.pk}/sign-out").status_code == 302
    assert not _is_signed_in(a) and not _is_signed_in(b) and _is_signed_in(boss)
    assert AuditEvent.objects.filter(organization=org, action="session.signed_out_everywhere",
                                     details__sessions=2).exists()


@pytest.mark.parametrize("role", ["admin", "member", "viewer"])
def test_weaker_roles_cannot_sign_a_member_out(org, owner, role, request):
    from tests import factories

    person = factories.member(org, role)
    target = _signed_in(owner)
    membership = Membership.objects.get(organization=org, user=owner)
    assert _signed_in(person).post(f"/settings/members/{membership.pk}/sign-out").status_code == 403
    assert _is_signed_in(target)


def test_an_outsider_cannot_sign_out_another_organizations_member(org, member, outsider):
    victim = _signed_in(member)
    membership = Membership.objects.get(organization=org, user=member)
    assert _signed_in(outsider).post(f"/settings/members/{membership.pk}/sign-out").status_code == 404
    assert _is_signed_in(victim)
