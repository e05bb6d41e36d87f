"""API keys: shown once, stored hashed, act with their user's rights in one organization."""

from __future__ import annotations

from rest_framework.test import APIClient

from agenticos.authentication import hash_key
from agenticos.models import ApiKey
from tests.api.conftest import make_agent


def _bearer(raw: str, org=None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}",
                       **({"HTTP_X_ORGANIZATION_ID": str(org.pk)} if org is not None else {}))
    return client


def _create(api_as, user, org) -> dict:
    response = api_as(user, org).post("/api/v1/api-keys", {"name": "ci"}, format="json")
    assert response.status_code == 201
    return response.json()


def test_a_created_key_is_shown_once_and_stored_only_as_a_hash(org, member, api_as):
    body = _create(api_as, member, org)
    raw = body["key"]
    key = ApiKey.objects.get(pk=body["id"])
    assert key.key_hash == hash_key(raw) and raw.startswith(key.prefix)
    listed = api_as(member, org).get("/api/v1/api-keys")
    assert raw not in listed.content.decode()
    assert [k["prefix"] for k in listed.json()["results"]] == [key.prefix]


def test_a_valid_key_authenticates_and_records_last_use(org, builder, api_as):
    raw = _create(api_as, builder, org)["key"]
    make_agent(builder, org, name="Mine")
    response = _bearer(raw).get("/api/v1/agents")
    assert response.status_code == 200
    assert [a["name"] for a in response.json()["results"]] == ["Mine"]
    assert ApiKey.objects.get(key_hash=hash_key(raw)).last_used_at is not None


def test_a_key_acts_with_its_users_rights(org, member, api_as):
    raw = _create(api_as, member, org)["key"]
    response = _bearer(raw).post("/api/v1/agents", {"name": "Nope"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["details"] == {"permission": "agents:edit", "role": "member"}


def test_a_revoked_key_gets_401(org, member, api_as):
    body = _create(api_as, member, org)
    assert api_as(member, org).delete(f"/api/v1/api-keys/{body['id']}").status_code == 200
    response = _bearer(body["key"]).get("/api/v1/agents")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_made_up_key_gets_401(db):
    assert _bearer("aos_not-a-real-key").get("/api/v1/me").status_code == 401


def test_a_key_cannot_reach_another_organization_even_when_its_user_belongs_there(
    org, member, outsider_org, api_as
):
    from agenticos.models import Membership

    Membership.objects.create(organization=outsider_org, user=member, role="owner")
    raw = _create(api_as, member, org)["key"]
    assert _bearer(raw, outsider_org).get("/api/v1/agents").status_code == 404
    assert _bearer(raw, org).get("/api/v1/agents").status_code == 200


def test_members_cannot_revoke_each_others_keys_but_admins_can(org, member, builder, admin_user, api_as):
    body = _create(api_as, member, org)
    assert api_as(builder, org).delete(f"/api/v1/api-keys/{body['id']}").status_code == 404
    assert api_as(admin_user, org).delete(f"/api/v1/api-keys/{body['id']}").status_code == 200


def test_me_through_a_key_shows_only_the_keys_organization(org, member, outsider_org, api_as):
    from agenticos.models import Membership

    Membership.objects.create(organization=outsider_org, user=member, role="viewer")
    raw = _create(api_as, member, org)["key"]
    body = _bearer(raw).get("/api/v1/me").json()
    assert [o["organization"]["id"] for o in body["organizations"]] == [str(org.pk)]
