"""Me, organizations, members, invitations and the role rules."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from agenticos import services as kernel
from agenticos.errors import Conflict, Forbidden
from agenticos.models import AuditEvent, Membership
from tests import factories
from tests.api.conftest import actor_of


def _membership(user, org) -> Membership:
    return Membership.objects.get(user=user, organization=org)


def test_me_lists_my_organizations_with_role_and_permissions(org, owner, outsider_org, api_as):
    Membership.objects.create(organization=outsider_org, user=owner, role="viewer")
    body = api_as(owner).get("/api/v1/me").json()
    assert body["user"]["email"] == owner.email
    roles = {o["organization"]["name"]: o["role"] for o in body["organizations"]}
    assert roles == {"Acme": "owner", "Other Corp": "viewer"}
    acme = next(o for o in body["organizations"] if o["role"] == "owner")
    assert "members:manage" in acme["permissions"]


def test_creating_an_organization_makes_me_its_owner(db, api_as):
    person = factories.user()
    response = api_as(person).post("/api/v1/organizations", {"name": "New Co"}, format="json")
    assert response.status_code == 201
    assert Membership.objects.get(user=person, organization_id=response.json()["id"]).role == "owner"


def test_members_list_shows_everyone_in_my_organization(org, owner, viewer, api_as):
    emails = {m["user"]["email"] for m in api_as(viewer, org).get("/api/v1/members").json()["results"]}
    assert emails == {owner.email, viewer.email}


def test_an_invitation_emails_a_link_whose_token_is_stored_hashed_and_joins_on_accept(
    org, owner, api_as, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(owner, org).post(
            "/api/v1/invitations", {"email": "Newbie@Example.com", "role": "builder"}, format="json"
        )
    assert response.status_code == 201
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["newbie@example.com"]
    token = re.search(r"/invitations/(\S+)", mail.outbox[0].body).group(1)
    invitation = org.invitations.get()
    assert invitation.token_hash != token and token not in response.content.decode()

    newbie = factories.user(email="newbie@example.com")
    accepted = api_as(newbie).post("/api/v1/invitations/accept", {"token": token}, format="json")
    assert accepted.status_code == 200
    assert _membership(newbie, org).role == "builder"
    again = api_as(newbie).post("/api/v1/invitations/accept", {"token": token}, format="json")
    assert again.status_code == 404


def test_an_invitation_cannot_be_accepted_by_someone_else(org, owner, api_as):
    _inv, token = kernel.invite_member(actor=actor_of(owner, org), email="right@example.com", role="member")
    wrong = factories.user(email="wrong@example.com")
    assert api_as(wrong).post("/api/v1/invitations/accept", {"token": token}, format="json").status_code == 404
    assert not Membership.objects.filter(user=wrong).exists()


def test_inviting_an_existing_member_is_a_409_naming_email(org, owner, builder, api_as):
    response = api_as(owner, org).post("/api/v1/invitations", {"email": builder.email}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["details"] == {"field": "email"}


def test_an_admin_cannot_invite_an_owner(org, admin_user, api_as):
    response = api_as(admin_user, org).post("/api/v1/invitations", {"email": "x@example.com", "role": "owner"},
                                            format="json")
    assert response.status_code == 403


def test_invitations_are_rate_limited_with_429(org, owner, api_as):
    client = api_as(owner, org)
    statuses = [
        client.post("/api/v1/invitations", {"email": f"p{i}@example.com"}, format="json").status_code
        for i in range(31)
    ]
    assert statuses[:30] == [201] * 30
    assert statuses[30] == 429
    last = client.post("/api/v1/invitations", {"email": "late@example.com"}, format="json")
    assert last.json()["error"]["code"] == "rate_limited" and int(last["Retry-After"]) > 0


def test_an_admin_can_change_a_builders_role_and_it_is_audited(org, admin_user, builder, api_as):
    member_id = _membership(builder, org).pk
    response = api_as(admin_user, org).patch(f"/api/v1/members/{member_id}", {"role": "viewer"}, format="json")
    assert response.status_code == 200 and response.json()["role"] == "viewer"
    event = AuditEvent.objects.get(action="member.role_changed")
    assert event.details == {"from": "builder", "to": "viewer"} and event.target_name == builder.email
    assert event.actor == admin_user and event.ip_address == "127.0.0.1"


def test_nobody_can_change_the_role_of_someone_who_outranks_them(org, owner, admin_user, api_as):
    response = api_as(admin_user, org).patch(
        f"/api/v1/members/{_membership(owner, org).pk}", {"role": "viewer"}, format="json"
    )
    assert response.status_code == 403
    assert _membership(owner, org).role == "owner"


def test_nobody_can_promote_someone_above_their_own_role(org, admin_user, builder, api_as):
    response = api_as(admin_user, org).patch(
        f"/api/v1/members/{_membership(builder, org).pk}", {"role": "owner"}, format="json"
    )
    assert response.status_code == 403


def test_the_last_owner_cannot_step_down_or_leave_or_be_suspended(org, owner, api_as):
    client = api_as(owner, org)
    mid = _membership(owner, org).pk
    demote = client.patch(f"/api/v1/members/{mid}", {"role": "admin"}, format="json")
    assert demote.status_code == 409 and demote.json()["error"]["code"] == "last_owner"
    assert client.delete(f"/api/v1/members/{mid}").status_code == 409
    assert _membership(owner, org).role == "owner"


def test_an_owner_can_step_down_when_another_owner_remains(org, owner, api_as):
    second = factories.member(org, "owner")
    response = api_as(owner, org).patch(f"/api/v1/members/{_membership(owner, org).pk}", {"role": "admin"},
                                        format="json")
    assert response.status_code == 200
    with pytest.raises(Conflict):
        kernel.change_member_role(actor=actor_of(second, org), membership=_membership(second, org), role="admin")


def test_suspending_a_member_locks_them_out_of_the_api(org, owner, builder, api_as):
    response = api_as(owner, org).patch(f"/api/v1/members/{_membership(builder, org).pk}", {"is_suspended": True},
                                        format="json")
    assert response.status_code == 200 and response.json()["is_suspended"] is True
    assert api_as(builder, org).get("/api/v1/agents").status_code == 404


def test_removing_a_member_revokes_their_api_keys(org, owner, builder, api_as):
    _key, raw = kernel.create_api_key(actor=actor_of(builder, org), name="mine")
    assert api_as(owner, org).delete(f"/api/v1/members/{_membership(builder, org).pk}").status_code == 204
    assert not Membership.objects.filter(user=builder, organization=org).exists()
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/agents").status_code == 401


def test_a_builder_cannot_remove_someone_else_but_can_leave(org, builder, member, api_as):
    with pytest.raises(Forbidden):
        kernel.remove_member(actor=actor_of(builder, org), membership=_membership(member, org))
    assert api_as(builder, org).delete(f"/api/v1/members/{_membership(builder, org).pk}").status_code == 204


def test_removing_a_member_drops_their_grants_on_agents_and_collections_and_no_one_elses(org, owner, builder, member):
    # The kernel drops nothing itself: governance and knowledge answer agenticos.signals.member_removed in the
    # removing transaction (the kernel imports no app). Both must answer, and touch only the removed person.
    from governance import grants as agent_grants
    from knowledge import grants as collection_grants

    agent = factories.published_agent(org, owner)
    collection = factories.collection(org, "Board minutes", visibility="private", created_by=owner)
    owner_actor = actor_of(owner, org)
    for person in (builder, member):
        agent_grants.share_agent(actor=owner_actor, agent=agent, user_id=person.pk, level="use")
        collection_grants.share_collection(actor=owner_actor, collection=collection, user_id=person.pk, level="view")
    kernel.remove_member(actor=owner_actor, membership=_membership(member, org))
    assert {g["user_id"] for g in agent_grants.agent_grants(agent)} == {builder.pk}
    assert collection_grants.grant_levels(member.pk) == {}
    assert collection_grants.grant_levels(builder.pk) == {str(collection.pk): "view"}
