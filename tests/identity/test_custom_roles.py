"""Custom roles: an owner composes a role from the permission catalog, names it and assigns it; its holders may do
exactly what it lists (through the same permission map as the built-in roles); nobody composes or gives more than
they have; another organization's role cannot be assigned or read; a role in use cannot be deleted."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent, Membership
from agenticos.permissions import permissions_of
from identity import roles
from identity.models import CustomRole
from tests import factories
from tests.api.conftest import actor_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def secret_keeper(org, owner):
    return roles.create_role(actor=actor_of(owner, org), name="Secret keeper",
                             permissions=["secrets:view", "secrets:manage", "agents:view"])


def test_an_owner_composes_a_role_and_its_holder_may_do_exactly_that(org, owner, api_as, secret_keeper):
    response = api_as(owner, org).post("/api/v1/roles", {"name": "Runner", "permissions": ["agents:view",
                                                                                          "agents:run"]})
    assert response.status_code == 201, response.content
    assert response.json()["key"].startswith("custom:")
    holder = factories.member(org, secret_keeper.key)
    client = api_as(holder, org)
    assert client.get("/api/v1/secrets").status_code == 200
    assert client.post("/api/v1/secrets", {"name": "k", "value": "v-123456789012"}).status_code == 201
    other = Membership.objects.get(organization=org, user=owner)
    assert client.patch(f"/api/v1/members/{other.pk}", {"role": "viewer"}).status_code == 403  # members:manage
    assert client.post("/api/v1/api-keys", {"name": "k"}).status_code == 403  # apikeys:manage is not in it
    me = client.get("/api/v1/me").json()["organizations"][0]
    assert me["role"] == secret_keeper.key and me["permissions"] == sorted(secret_keeper.permissions)
    assert AuditEvent.objects.filter(organization=org, action="role.created").count() == 2


def test_the_roles_list_shows_presets_and_custom_roles_to_members_only(org, member, outsider, outsider_org, api_as,
                                                                       secret_keeper):
    listed = api_as(member, org).get("/api/v1/roles").json()
    assert [r["key"] for r in listed][:5] == ["owner", "admin", "builder", "member", "viewer"]
    assert listed[-1]["name"] == "Secret keeper"
    assert api_as(outsider, org).get("/api/v1/roles").status_code == 404
    assert "Secret keeper" not in str(api_as(outsider, outsider_org).get("/api/v1/roles").json())
    assert api_as(outsider, outsider_org).get(f"/api/v1/roles/{secret_keeper.pk}").status_code == 404


@pytest.mark.parametrize("role", ["admin", "builder", "member", "viewer"])
def test_weaker_roles_cannot_compose_change_or_delete_roles(org, role, api_as, secret_keeper):
    client = api_as(factories.member(org, role), org)
    assert client.post("/api/v1/roles", {"name": "Mine", "permissions": ["agents:view"]}).status_code == 403
    assert client.patch(f"/api/v1/roles/{secret_keeper.pk}", {"permissions": ["agents:view"]}).status_code == 403
    assert client.delete(f"/api/v1/roles/{secret_keeper.pk}").status_code == 403
    assert CustomRole.objects.count() == 1
    assert sorted(CustomRole.objects.get().permissions) == ["agents:view", "secrets:manage", "secrets:view"]


def test_an_outsider_cannot_change_or_assign_another_organizations_role(org, owner, outsider, outsider_org, api_as,
                                                                         secret_keeper):
    client = api_as(outsider, outsider_org)
    assert client.patch(f"/api/v1/roles/{secret_keeper.pk}", {"name": "Mine"}).status_code == 404
    assert client.delete(f"/api/v1/roles/{secret_keeper.pk}").status_code == 404
    colleague = factories.member(outsider_org, "member")
    membership = Membership.objects.get(user=colleague)
    answer = client.patch(f"/api/v1/members/{membership.pk}", {"role": secret_keeper.key})
    assert answer.status_code == 422
    membership.refresh_from_db()
    assert membership.role == "member"
    assert client.post("/api/v1/invitations", {"email": "x@example.com", "role": secret_keeper.key}).status_code == 422


def test_a_foreign_custom_role_written_onto_a_membership_grants_nothing(org, outsider_org, secret_keeper):
    person = factories.member(outsider_org, secret_keeper.key)  # only a bug could write this: it must not count
    actor = actor_of(person, outsider_org)
    assert not actor.has("secrets:view")
    assert permissions_of(secret_keeper.key, org.pk) == frozenset(secret_keeper.permissions)


@pytest.mark.parametrize("permissions", [["signin:manage"], ["roles:manage"], ["agents:fly"], "agents:view", [1]])
def test_owner_only_or_unknown_permissions_cannot_be_composed(org, owner, api_as, permissions):
    answer = api_as(owner, org).post("/api/v1/roles", {"name": "Sneaky", "permissions": permissions})
    # A list naming a permission a custom role cannot hold breaks a rule; a value that is not a list is malformed.
    assert answer.status_code == (422 if isinstance(permissions, list) else 400), answer.content
    assert not CustomRole.objects.exists()


def test_an_admin_may_assign_a_custom_role_within_their_own_permissions_only(org, owner, admin_user, api_as):
    modest = roles.create_role(actor=actor_of(owner, org), name="Modest", permissions=["agents:view"])
    member = factories.member(org, "member")
    membership = Membership.objects.get(user=member)
    client = api_as(admin_user, org)
    assert client.patch(f"/api/v1/members/{membership.pk}", {"role": modest.key}).status_code == 200
    membership.refresh_from_db()
    assert membership.role == modest.key
    assert AuditEvent.objects.filter(organization=org, action="member.role_changed",
                                     details__to=modest.key).exists()
    # A builder (members:manage is not theirs) cannot; an admin cannot touch an owner.
    assert api_as(factories.member(org, "builder"), org).patch(
        f"/api/v1/members/{membership.pk}", {"role": "viewer"}).status_code == 403


def test_a_custom_role_holder_with_members_manage_cannot_give_more_than_they_have(org, owner, api_as):
    manager = roles.create_role(actor=actor_of(owner, org), name="People lead",
                                permissions=["members:manage", "agents:view"])
    lead = factories.member(org, manager.key)
    member = factories.member(org, "member")
    membership = Membership.objects.get(user=member)
    client = api_as(lead, org)
    assert client.patch(f"/api/v1/members/{membership.pk}", {"role": "admin"}).status_code == 403
    assert client.patch(f"/api/v1/members/{membership.pk}", {"role": "viewer"}).status_code == 403  # member ⊄ lead
    membership.refresh_from_db()
    assert membership.role == "member"


def test_a_role_in_use_cannot_be_deleted_and_a_free_one_can(org, owner, api_as, secret_keeper):
    holder = factories.member(org, secret_keeper.key)
    client = api_as(owner, org)
    assert client.delete(f"/api/v1/roles/{secret_keeper.pk}").status_code == 409
    Membership.objects.filter(user=holder).update(role="member")
    assert client.delete(f"/api/v1/roles/{secret_keeper.pk}").status_code == 204
    assert not CustomRole.objects.exists()
    assert AuditEvent.objects.filter(organization=org, action="role.deleted").exists()


def test_changing_a_roles_permissions_changes_what_its_holders_may_do(org, owner, api_as, secret_keeper):
    holder = factories.member(org, secret_keeper.key)
    assert api_as(holder, org).get("/api/v1/secrets").status_code == 200
    api_as(owner, org).patch(f"/api/v1/roles/{secret_keeper.pk}", {"permissions": ["agents:view"]})
    assert api_as(holder, org).get("/api/v1/secrets").status_code == 403
    event = AuditEvent.objects.get(organization=org, action="role.updated")
    assert event.details == {"added": [], "removed": ["secrets:manage", "secrets:view"]}


def test_the_console_roles_page_is_for_owners(org, owner, admin_user, outsider, client_for_roles):
    assert client_for_roles(owner).get("/settings/roles/").status_code == 200
    assert client_for_roles(admin_user).get("/settings/roles/").status_code == 403
    response = client_for_roles(owner).post("/settings/roles/", {"name": "Reader", "permissions": ["agents:view",
                                                                                                  "runs:view"]})
    assert response.status_code == 302
    role = CustomRole.objects.get(organization=org)
    assert sorted(role.permissions) == ["agents:view", "runs:view"]
    assert client_for_roles(outsider).get(f"/settings/roles/{role.pk}/").status_code == 404
    assert client_for_roles(admin_user).post(f"/settings/roles/{role.pk}/", {"action": "delete"}).status_code == 403
    assert CustomRole.objects.filter(pk=role.pk).exists()


@pytest.fixture
def client_for_roles():
    from django.test import Client

    def make(user):
        client = Client()
        client.force_login(user)
        return client

    return make
