"""Settings → Provisioning: only owners create, see and revoke SCIM tokens and set the roles provisioned members get;
a token is shown once and only its prefix afterwards; weaker roles (a custom role too) are refused and write
nothing; another organization's token cannot be revoked."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from agenticos.models import AuditEvent
from agenticos.permissions import OWNER_ONLY, PERMISSIONS
from identity import provisioning, roles
from identity.models import ScimDirectory, ScimToken
from tests import factories
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_owner_creates_a_token_that_is_shown_once(org, owner):
    client = _client(owner)
    page = client.post("/settings/provisioning/", {"action": "token", "name": "Entra ID"})
    assert page.status_code == 200
    raw = re.search(rb"data-new-token>(scim_[\w-]+)<", page.content).group(1).decode()
    row = ScimToken.objects.get(organization=org)
    assert row.token_hash == provisioning.hash_token(raw)
    again = client.get("/settings/provisioning/")
    assert raw.encode() not in again.content and row.prefix.encode() in again.content
    assert AuditEvent.objects.filter(organization=org, action="scim.token_created").count() == 1
    assert raw not in str(list(AuditEvent.objects.values_list("details", "target_name")))


def test_an_owner_revokes_a_token_and_maps_groups_to_roles(org, owner):
    client = _client(owner)
    token, _ = provisioning.create_token(actor=owner_actor(org, owner), name="Okta")
    assert client.post("/settings/provisioning/", {"action": "revoke", "token": token.pk}).status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert client.post("/settings/provisioning/", {"action": "roles", "default_role": "viewer",
                                                   "role_map": '{"Engineering": "builder"}'}).status_code == 302
    directory = ScimDirectory.objects.get(organization=org)
    assert directory.default_role == "viewer" and directory.role_map == {"Engineering": "builder"}


@pytest.mark.parametrize("role_map", ['{"Admins": "owner"}', '{"x": "no-such-role"}', "[1]"])
def test_a_map_that_gives_owner_or_no_role_is_refused(org, owner, role_map):
    client = _client(owner)  # signing in is audited: before the snapshot
    before = AuditEvent.objects.count()
    response = client.post("/settings/provisioning/", {"action": "roles", "default_role": "member",
                                                               "role_map": role_map})
    assert response.status_code == 422
    assert not ScimDirectory.objects.filter(organization=org, role_map__has_key="Admins").exists()
    assert AuditEvent.objects.count() == before


@pytest.mark.parametrize("role", ["admin", "builder", "member", "viewer", "custom"])
def test_weaker_roles_are_refused_and_write_nothing(org, owner, role):
    if role == "custom":
        role = roles.create_role(actor=owner_actor(org, owner), name="Everything composable",
                                 permissions=sorted(set(PERMISSIONS) - OWNER_ONLY)).key
    person = factories.member(org, role)
    client = _client(person)
    token, _ = provisioning.create_token(actor=owner_actor(org, owner), name="Okta")
    before = AuditEvent.objects.count()
    assert client.get("/settings/provisioning/").status_code == 403
    assert client.post("/settings/provisioning/", {"action": "token", "name": "mine"}).status_code == 403
    assert client.post("/settings/provisioning/", {"action": "revoke", "token": token.pk}).status_code == 403
    assert ScimToken.objects.filter(organization=org).count() == 1 and AuditEvent.objects.count() == before
    assert b"/settings/provisioning/" not in client.get("/settings/").content


def test_an_outsider_cannot_revoke_another_organizations_token(org, owner, outsider):
    token, _ = provisioning.create_token(actor=owner_actor(org, owner), name="Okta")
    assert _client(outsider).post("/settings/provisioning/", {"action": "revoke", "token": token.pk}
                                  ).status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None
