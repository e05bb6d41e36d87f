"""/api/v1/scim-tokens: an owner creates a SCIM token (shown once), lists the tokens (prefixes, never the tokens)
and revokes one — after which the IdP's next SCIM request with it is refused. Every other role, a custom role
(which can never hold signin:manage), an outsider and an API key of a weaker member are refused with nothing
written; another organization's token cannot be revoked or seen."""

from __future__ import annotations

import pytest
from django.test import Client

from agenticos.models import AuditEvent
from identity import provisioning, roles
from identity.models import ScimToken
from tests import factories
from tests.api.conftest import actor_of
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db
LIST = "/api/v1/scim-tokens"


def _scim_users(raw: str) -> int:
    return Client().get("/scim/v2/Users", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code


def test_an_owner_creates_lists_and_revokes_a_token(org, owner, api_as):
    client = api_as(owner, org)
    created = client.post(LIST, {"name": "Entra ID"}, format="json")
    assert created.status_code == 201
    body = created.json()
    raw = body["token"]
    assert raw.startswith(body["prefix"]) and body["created_by"] == owner.email and body["revoked_at"] is None
    assert _scim_users(raw) == 200
    listed = client.get(LIST)
    assert listed.status_code == 200
    assert [t["name"] for t in listed.json()] == ["Entra ID"]
    assert raw not in listed.content.decode() and "token" not in listed.json()[0]
    assert raw not in str(list(AuditEvent.objects.filter(organization=org).values("details", "target_name")))
    assert client.delete(f"{LIST}/{body['id']}").status_code == 204
    assert client.get(LIST).json()[0]["revoked_at"] is not None
    assert _scim_users(raw) == 401
    actions = list(AuditEvent.objects.filter(organization=org, action__startswith="scim.token").values_list(
        "action", flat=True))
    assert sorted(actions) == ["scim.token_created", "scim.token_revoked"]


def test_a_token_needs_a_name(org, owner, api_as):
    response = api_as(owner, org).post(LIST, {"name": ""}, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"]
    assert not ScimToken.objects.exists()


@pytest.mark.parametrize("role", ["admin", "builder", "member", "viewer", "custom"])
def test_weaker_roles_cannot_list_create_or_revoke(org, owner, api_as, role):
    token, raw = provisioning.create_token(actor=owner_actor(org, owner), name="Okta")
    if role == "custom":  # every permission a custom role may hold: signin:manage is never one of them
        custom = roles.create_role(actor=actor_of(owner, org), name="Everything", permissions=sorted(
            roles.COMPOSABLE))
        role = custom.key
    person = factories.member(org, role)
    client = api_as(person, org)
    before = (ScimToken.objects.count(), AuditEvent.objects.count())
    for response in (client.get(LIST), client.post(LIST, {"name": "Mine"}, format="json"),
                     client.delete(f"{LIST}/{token.pk}")):
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "forbidden"
    assert (ScimToken.objects.count(), AuditEvent.objects.count()) == before
    token.refresh_from_db()
    assert token.revoked_at is None and _scim_users(raw) == 200


def test_an_outsider_neither_sees_nor_revokes_this_organizations_tokens(org, owner, outsider, outsider_org,
                                                                         api_as):
    token, raw = provisioning.create_token(actor=owner_actor(org, owner), name="Okta")
    # Naming Acme: not a member, so Acme is not found.
    assert api_as(outsider, org).get(LIST).status_code == 404
    assert api_as(outsider, org).delete(f"{LIST}/{token.pk}").status_code == 404
    # In their own organization (where they are owner): Acme's token is not there.
    own = api_as(outsider, outsider_org)
    assert own.get(LIST).json() == []
    assert own.delete(f"{LIST}/{token.pk}").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None and _scim_users(raw) == 200
