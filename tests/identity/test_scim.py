"""SCIM 2.0 at /scim/v2/ with the requests Okta and Entra ID send: provisioning creates members, PATCH active=false
deprovisions (the membership suspended, API keys and sessions in that organization stopped; the person's other
organizations untouched; runs kept), userName filters and pages, groups give roles. Every refusal writes nothing:
no token, a revoked one, another organization's token, a domain the organization has not verified, a group naming
another organization's member."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import timezone

from agenticos import authentication
from agenticos.models import ApiKey, AuditEvent, Membership, User
from identity import provisioning
from identity.models import ScimGroup, ScimToken, VerifiedDomain
from tests import factories
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db
SCIM = "application/scim+json"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
PASSWORD = "pw-correct-horse-9"


@pytest.fixture
def acme(db):
    org = factories.organization(name="Acme")
    owner = factories.member(org, "owner", email="owner@acme.com")
    VerifiedDomain.objects.create(organization=org, domain="acme.com", token="t", verified_at=timezone.now())
    _, raw = provisioning.create_token(actor=owner_actor(org, owner), name="Okta")
    return org, owner, raw


@pytest.fixture
def globex(db):
    org = factories.organization(name="Globex")
    owner = factories.member(org, "owner", email="owner@globex.test")
    VerifiedDomain.objects.create(organization=org, domain="globex.test", token="g", verified_at=timezone.now())
    _, raw = provisioning.create_token(actor=owner_actor(org, owner), name="Entra")
    return org, owner, raw


def scim(token: str, method: str, path: str, body: dict | None = None, **extra):
    client = Client()
    call = getattr(client, method.lower())
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {token}", **extra}
    if body is not None:
        return call(f"/scim/v2/{path}", data=json.dumps(body), content_type=SCIM, **kwargs)
    return call(f"/scim/v2/{path}", **kwargs)


def okta_user(email: str, active: bool = True) -> dict:
    """What Okta POSTs to /Users (its SCIM 2.0 test app)."""
    return {"schemas": [USER], "userName": email, "name": {"givenName": "Ada", "familyName": "Lovelace"},
            "emails": [{"primary": True, "value": email, "type": "work"}], "displayName": "Ada Lovelace",
            "locale": "en-US", "externalId": "00u1abcd", "groups": [], "password": "not-kept-1", "active": active}


def entra_user(email: str) -> dict:
    """What Entra ID POSTs to /Users."""
    return {"schemas": [USER, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
            "externalId": "0a21f0f2-8d2a-4f8e-bf98-7b2c4e8a0f51", "userName": email, "active": True,
            "emails": [{"primary": True, "type": "work", "value": email}],
            "meta": {"resourceType": "User"}, "name": {"formatted": "Grace Hopper", "familyName": "Hopper",
                                                         "givenName": "Grace"}, "roles": []}


def _written() -> tuple[int, int, int, int]:
    return (User.objects.count(), Membership.objects.count(), ScimGroup.objects.count(),
            AuditEvent.objects.filter(action__startswith="scim.").count())


# ------------------------------------------------------------------ Users


def test_okta_checks_for_the_user_then_creates_it(acme):
    org, _, token = acme
    found = scim(token, "GET", 'Users?filter=userName%20eq%20%22ada%40acme.com%22&startIndex=1&count=100')
    assert found.status_code == 200 and found["Content-Type"].startswith(SCIM)
    assert found.json()["totalResults"] == 0 and found.json()["Resources"] == []
    created = scim(token, "POST", "Users", okta_user("Ada@Acme.com"))
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["userName"] == "ada@acme.com" and body["active"] is True and body["externalId"] == "00u1abcd"
    assert created["Location"].endswith(f"/scim/v2/Users/{body['id']}")
    membership = Membership.objects.get(pk=body["id"])
    assert membership.organization == org and membership.role == "member"
    assert not membership.user.has_usable_password()  # the password Okta sent is not kept
    again = scim(token, "GET", 'Users?filter=userName eq "ada@acme.com"').json()
    assert again["totalResults"] == 1 and again["Resources"][0]["id"] == body["id"]
    assert scim(token, "POST", "Users", okta_user("ada@acme.com")).status_code == 409
    event = AuditEvent.objects.get(action="scim.user_created")
    assert event.organization == org and event.actor_label.startswith("SCIM token Okta")


def test_entra_creates_then_deprovisions_with_its_string_boolean(acme, outsider_org):
    org, _, token = acme
    created = scim(token, "POST", "Users", entra_user("grace@acme.com")).json()
    membership = Membership.objects.get(pk=created["id"])
    grace = membership.user
    grace.set_password(PASSWORD)
    grace.save()
    Membership.objects.create(organization=outsider_org, user=grace, role="member")
    key_raw, prefix = authentication.generate_key()
    ApiKey.objects.create(organization=org, user=grace, name="k", prefix=prefix,
                          key_hash=authentication.hash_key(key_raw))
    other_raw, other_prefix = authentication.generate_key()
    ApiKey.objects.create(organization=outsider_org, user=grace, name="k2", prefix=other_prefix,
                          key_hash=authentication.hash_key(other_raw))
    browser = Client()
    assert browser.post("/login/", {"username": "grace@acme.com", "password": PASSWORD, "next": ""}).status_code == 302
    assert browser.get("/api/v1/roles", HTTP_X_ORGANIZATION_ID=str(org.pk)).status_code == 200

    answer = scim(token, "PATCH", f"Users/{created['id']}", {
        "schemas": [PATCH], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]})

    assert answer.status_code == 200 and answer.json()["active"] is False
    membership.refresh_from_db()
    assert membership.is_suspended
    assert browser.get("/api/v1/roles", HTTP_X_ORGANIZATION_ID=str(org.pk)).status_code == 404
    assert browser.get("/api/v1/roles", HTTP_X_ORGANIZATION_ID=str(outsider_org.pk)).status_code == 200
    assert Client().get("/api/v1/roles", HTTP_AUTHORIZATION=f"Bearer {key_raw}").status_code == 401
    assert Client().get("/api/v1/roles", HTTP_AUTHORIZATION=f"Bearer {other_raw}").status_code == 200
    event = AuditEvent.objects.get(action="scim.user_deactivated")
    assert event.details == {"api_keys_revoked": 1, "sessions_closed": 1}
    reactivated = scim(token, "PATCH", f"Users/{created['id']}", {
        "schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": True}}]})
    assert reactivated.json()["active"] is True
    assert browser.get("/api/v1/roles", HTTP_X_ORGANIZATION_ID=str(org.pk)).status_code == 404  # signs in again


def test_deactivation_keeps_the_members_runs_and_approvals(acme):
    org, owner, token = acme
    from agents.models import Run
    from governance.models import Approval

    created = scim(token, "POST", "Users", entra_user("grace@acme.com")).json()
    grace = Membership.objects.get(pk=created["id"]).user
    agent = factories.published_agent(org, owner)
    run = Run.objects.create(organization=org, agent=agent, version=agent.versions.get(), surface="web", user=grace,
                             status="completed", output="done")
    approval = Approval.objects.create(organization=org, run=run, tool_call_id="c1", tool_id="t", tool_name="t",
                                       status=Approval.Status.APPROVED, decided_by=grace)

    answer = scim(token, "PATCH", f"Users/{created['id']}", {
        "schemas": [PATCH], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]})

    assert answer.status_code == 200 and answer.json()["active"] is False
    assert Run.objects.filter(pk=run.pk, user=grace, output="done").exists()
    assert Approval.objects.filter(pk=approval.pk, decided_by=grace, status=Approval.Status.APPROVED).exists()


def test_entra_updates_attributes_by_path_and_okta_replaces_with_put(acme):
    _, _, token = acme
    uid = scim(token, "POST", "Users", entra_user("grace@acme.com")).json()["id"]
    patched = scim(token, "PATCH", f"Users/{uid}", {"schemas": [PATCH], "Operations": [
        {"op": "Add", "path": "name.givenName", "value": "Amazing"},
        {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "grace.hopper@acme.com"},
        {"op": "Replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
         "value": "Navy"}]})
    assert patched.status_code == 200, patched.content
    assert patched.json()["userName"] == "grace.hopper@acme.com"
    assert patched.json()["name"]["givenName"] == "Amazing"
    put = scim(token, "PUT", f"Users/{uid}", {**okta_user("grace.hopper@acme.com"), "displayName": "Rear Admiral"})
    assert put.status_code == 200 and put.json()["displayName"] == "Rear Admiral"


def test_pages_follow_start_index_and_count(acme):
    _, _, token = acme
    for n in range(3):
        assert scim(token, "POST", "Users", okta_user(f"p{n}@acme.com")).status_code == 201
    page = scim(token, "GET", "Users?startIndex=2&count=2").json()
    assert page["totalResults"] == 4 and page["startIndex"] == 2 and page["itemsPerPage"] == 2
    ids = [r["id"] for r in scim(token, "GET", "Users?count=10").json()["Resources"]]
    assert [r["id"] for r in page["Resources"]] == ids[1:3]


def test_a_user_outside_the_verified_domains_is_refused_with_nothing_written(acme):
    _, _, token = acme
    before = _written()
    answer = scim(token, "POST", "Users", okta_user("mallory@evil.example"))
    assert answer.status_code == 400 and answer.json()["scimType"] == "invalidValue"
    assert answer.json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert _written() == before


def test_the_last_owner_is_never_deprovisioned(acme):
    org, owner, token = acme
    uid = Membership.objects.get(organization=org, user=owner).pk
    answer = scim(token, "PATCH", f"Users/{uid}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "active", "value": False}]})
    assert answer.status_code == 400 and answer.json()["scimType"] == "mutability"
    assert not Membership.objects.get(pk=uid).is_suspended


def test_delete_removes_the_membership_and_keeps_the_person(acme):
    _, _, token = acme
    uid = scim(token, "POST", "Users", entra_user("grace@acme.com")).json()["id"]
    assert scim(token, "DELETE", f"Users/{uid}").status_code == 204
    assert scim(token, "GET", f"Users/{uid}").status_code == 404
    assert User.objects.filter(email="grace@acme.com").exists()


def test_delete_drops_what_the_member_held_as_removing_them_in_the_console_does(acme):
    """The kernel's one removal (agenticos.services): API keys revoked and `member_removed` sent, so the agent
    grants they held go in the same transaction — a member provisioned back later starts with nothing."""
    from governance import grants
    from tests.api.conftest import actor_of, make_agent

    org, owner, token = acme
    uid = scim(token, "POST", "Users", entra_user("grace@acme.com")).json()["id"]
    grace = User.objects.get(email="grace@acme.com")
    agent = make_agent(owner, org, name="Private", slug="private", visibility="private",
                       profile=factories.model_profile(org))
    grants.share_agent(actor=actor_of(owner, org), agent=agent, user_id=grace.pk, level="use")
    assert grants.GRANTS.levels_for(grace.pk) == {str(agent.pk): "use"}
    assert scim(token, "DELETE", f"Users/{uid}").status_code == 204
    assert grants.GRANTS.levels_for(grace.pk) == {}


# ------------------------------------------------------------------ Groups and roles


def test_groups_give_roles_as_entra_and_okta_push_them(acme):
    org, owner, token = acme
    provisioning.configure_directory(actor=owner_actor(org, owner), default_role="viewer",
                                     role_map={"Engineering": "builder", "Admins": "admin"})
    ada = scim(token, "POST", "Users", okta_user("ada@acme.com")).json()["id"]
    grace = scim(token, "POST", "Users", entra_user("grace@acme.com")).json()["id"]
    assert Membership.objects.get(pk=ada).role == "viewer"
    group = scim(token, "POST", "Groups", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                                           "displayName": "Engineering", "members": []})
    assert group.status_code == 201
    gid = group.json()["id"]
    assert scim(token, "PATCH", f"Groups/{gid}", {"schemas": [PATCH], "Operations": [  # Entra
        {"op": "Add", "path": "members", "value": [{"value": ada}, {"value": grace}]}]}).status_code == 204
    assert {Membership.objects.get(pk=ada).role, Membership.objects.get(pk=grace).role} == {"builder"}
    found = scim(token, "GET", 'Groups?filter=displayName eq "Engineering"&excludedAttributes=members').json()
    assert found["totalResults"] == 1 and "members" not in found["Resources"][0]
    assert scim(token, "PATCH", f"Groups/{gid}", {"schemas": [PATCH], "Operations": [  # Okta
        {"op": "remove", "path": f'members[value eq "{ada}"]'}]}).status_code == 204
    assert Membership.objects.get(pk=ada).role == "viewer" and Membership.objects.get(pk=grace).role == "builder"
    user = scim(token, "GET", f"Users/{grace}").json()
    assert user["groups"] == [{"value": gid, "display": "Engineering"}]
    assert scim(token, "DELETE", f"Groups/{gid}").status_code == 204
    assert Membership.objects.get(pk=grace).role == "viewer"
    assert AuditEvent.objects.filter(action="member.role_changed", details__via="scim").count() == 4


def test_owners_keep_their_role_whatever_groups_say(acme):
    org, owner, token = acme
    provisioning.configure_directory(actor=owner_actor(org, owner), default_role="member",
                                     role_map={"Everyone": "viewer"})
    uid = str(Membership.objects.get(organization=org, user=owner).pk)
    assert scim(token, "POST", "Groups", {"displayName": "Everyone", "members": [{"value": uid}]}).status_code == 201
    assert Membership.objects.get(pk=uid).role == "owner"


# ------------------------------------------------------------------ the door


def test_another_organizations_token_never_reaches_these_members(acme, globex):
    org, owner, _ = acme
    _, _, their_token = globex
    mine = Membership.objects.get(organization=org, user=owner)
    before = _written()
    assert scim(their_token, "GET", f"Users/{mine.pk}").status_code == 404
    assert scim(their_token, "PATCH", f"Users/{mine.pk}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "active", "value": False}]}).status_code == 404
    assert scim(their_token, "DELETE", f"Users/{mine.pk}").status_code == 404
    listed = scim(their_token, "GET", 'Users?filter=userName eq "owner@acme.com"').json()
    assert listed["totalResults"] == 0
    assert scim(their_token, "POST", "Users", okta_user("ada@acme.com")).status_code == 400  # not their domain
    assert scim(their_token, "POST", "Groups", {"displayName": "Steal", "members": [{"value": str(mine.pk)}]}
                ).status_code == 400
    assert _written() == before
    assert not Membership.objects.get(pk=mine.pk).is_suspended


@pytest.mark.parametrize("header", ["", "Bearer ", "Bearer scim_nope", "Basic b3duZXI6cHc=", "Bearer aos_x"])
def test_no_valid_token_is_refused(acme, header):
    before = _written()
    answer = Client().get("/scim/v2/Users", HTTP_AUTHORIZATION=header)
    assert answer.status_code == 401 and answer.json()["status"] == "401"
    assert _written() == before


def test_a_revoked_token_stops_at_once(acme):
    org, owner, token = acme
    row = ScimToken.objects.get(organization=org)
    assert scim(token, "GET", "Users").status_code == 200
    provisioning.revoke_token(actor=owner_actor(org, owner), token=row)
    assert scim(token, "GET", "Users").status_code == 401
    assert AuditEvent.objects.filter(action="scim.token_revoked", organization=org).exists()


def test_only_the_hash_is_kept(acme):
    _, _, token = acme
    row = ScimToken.objects.get()
    assert token not in (row.token_hash, row.prefix) and row.token_hash == provisioning.hash_token(token)


def test_it_is_rate_limited_per_token(acme, settings):
    _, _, token = acme
    settings.SCIM_RATE_LIMIT_PER_MINUTE = 2
    assert [scim(token, "GET", "Users").status_code for _ in range(3)] == [200, 200, 429]
    assert scim(token, "GET", "Users")["Retry-After"]


@pytest.mark.parametrize("query", ['filter=userName co "ada"', 'filter=title eq "x"', "filter=userName eq",
                                   "startIndex=x"])
def test_what_it_does_not_support_is_a_scim_error(acme, query):
    _, _, token = acme
    answer = scim(token, "GET", f"Users?{query}")
    assert answer.status_code == 400 and answer.json()["schemas"][0].endswith(":Error")


@pytest.mark.parametrize("body", [[], "x", {"schemas": [PATCH]}, {"schemas": [PATCH], "Operations": [{"op": "move"}]},
                                  {"schemas": [PATCH], "Operations": [{"op": "replace", "path": "active",
                                                                       "value": "maybe"}]}])
def test_malformed_patches_write_nothing(acme, body):
    org, owner, token = acme
    uid = scim(token, "POST", "Users", okta_user("ada@acme.com")).json()["id"]
    before = _written()
    assert scim(token, "PATCH", f"Users/{uid}", body).status_code == 400
    assert _written() == before


def test_discovery_answers_for_a_token(acme):
    _, _, token = acme
    assert scim(token, "GET", "ServiceProviderConfig").json()["patch"]["supported"] is True
    assert Client().get("/scim/v2/ServiceProviderConfig").status_code == 401
