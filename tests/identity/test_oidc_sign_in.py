"""Single sign-on through an organization's OpenID Connect provider (a real local one: discovery, JWKS, RS256 ID
tokens, PKCE): the e-mail's verified domain picks the IdP, a first sign-in joins just in time, and every bent
answer — another issuer, another audience, expired, another key, a replayed state or a wrong nonce, an e-mail
outside the verified domains, a group naming a role the organization lacks — is refused with nothing written."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.socialaccount.models import SocialAccount
from django.test import Client
from django.utils import timezone

from agenticos.models import AuditEvent, Membership, User
from identity import services
from identity.models import OidcConnection, UserSession, VerifiedDomain
from tests import factories
from tests.identity.conftest import owner_actor, sso_sign_in, start_sso, through_idp

pytestmark = pytest.mark.django_db


def _nothing_written(org) -> None:
    assert not User.objects.filter(email="ada@acme.com").exists()
    assert not SocialAccount.objects.exists()
    assert not Membership.objects.filter(organization=org).exclude(role="owner").exists()
    assert not UserSession.objects.exists()


def test_an_email_of_a_verified_domain_is_sent_to_its_organizations_provider(acme, idp):
    org, _, connection = acme
    location = start_sso(Client())
    parts = urlsplit(location)
    query = parse_qs(parts.query)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{idp.issuer}/authorize"
    assert query["client_id"] == [idp.client_id]
    assert query["redirect_uri"] == [f"http://testserver/accounts/oidc/{connection.slug}/login/callback/"]
    assert query["nonce"][0] and query["state"][0] and query["code_challenge_method"] == ["S256"]
    assert idp.client_secret not in location


def test_a_first_sso_sign_in_joins_the_organization_with_its_default_role(acme, idp):
    org, _, _ = acme
    client = Client()
    response = sso_sign_in(client)
    assert response.status_code == 302 and response["Location"] == "/"
    ada = User.objects.get(email="ada@acme.com")
    assert Membership.objects.get(organization=org, user=ada).role == "member"
    assert client.get("/").status_code == 200  # signed in, in Acme
    # The client authenticated at the token endpoint, PKCE held, and the ID token was checked against the JWKS.
    form = idp.token_requests[-1]
    assert form["code_verifier"][0] and ("POST", "/token") in idp.requests and ("GET", "/jwks") in idp.requests
    actions = set(AuditEvent.objects.filter(organization=org).values_list("action", flat=True))
    assert {"member.joined_by_sso", "signin.succeeded"} <= actions
    assert UserSession.objects.get(user=ada).method == "sso"


def test_a_person_with_a_password_account_signs_in_as_themself(acme, idp):
    org, _, _ = acme
    other = factories.organization(name="Elsewhere")
    ada = factories.member(other, "builder", email="ada@acme.com")
    sso_sign_in(Client())
    assert User.objects.filter(email="ada@acme.com").count() == 1
    assert Membership.objects.get(organization=org, user=ada).role == "member"
    assert Membership.objects.get(organization=other, user=ada).role == "builder"


def test_a_group_mapped_to_a_role_gives_that_role(acme, idp):
    org, owner, _ = acme
    services.configure_oidc(actor=owner_actor(org, owner), display_name="Acme SSO", issuer_url=idp.issuer,
                            client_id=idp.client_id, role_map={"eng": "builder"}, role_claim="groups")
    idp.person = {**idp.person, "groups": ["Everyone", "eng"]}
    sso_sign_in(Client())
    assert Membership.objects.get(organization=org, user__email="ada@acme.com").role == "builder"


def test_a_claim_naming_roles_directly_gives_the_strongest(acme, idp):
    org, _, _ = acme
    idp.person = {**idp.person, "groups": ["viewer", "builder"]}
    sso_sign_in(Client())
    assert Membership.objects.get(organization=org, user__email="ada@acme.com").role == "builder"


@pytest.mark.parametrize("groups", [["superadmin"], ["owner"], "superadmin", [["nested"]]])
def test_a_group_claim_naming_a_role_the_organization_lacks_is_refused(acme, idp, groups):
    org, _, _ = acme
    idp.person = {**idp.person, "groups": groups}
    response = sso_sign_in(Client())
    assert response.status_code == 403
    _nothing_written(org)
    assert AuditEvent.objects.filter(organization=org, action="signin.failed").exists()


@pytest.mark.parametrize("bend", [
    {"iss": "http://127.0.0.1:1/another-issuer"},
    {"aud": "someone-elses-client"},
    {"expired": True},
    {"foreign_key": True},
    {"nonce": "a-nonce-from-another-sign-in"},
], ids=["other-issuer", "wrong-audience", "expired", "signed-by-another-key", "wrong-nonce"])
def test_a_bent_id_token_is_refused_with_nothing_written(acme, idp, bend):
    org, _, _ = acme
    idp.bend = bend
    response = sso_sign_in(Client())
    assert response.status_code == 403
    assert b"data-sso-refused" in response.content
    _nothing_written(org)
    assert AuditEvent.objects.filter(organization=org, action="signin.failed").exists()


def test_a_replayed_callback_is_refused(acme, idp):
    org, _, _ = acme
    client = Client()
    callback = through_idp(start_sso(client))
    assert client.get(callback).status_code == 302
    client.logout()
    # The same state and code again, in the same browser: the state was used up (and so was the code).
    assert client.get(callback).status_code == 403
    # And a stranger's browser replaying someone's callback has no state at all.
    assert Client().get(callback).status_code == 403
    assert User.objects.filter(email="ada@acme.com").count() == 1
    assert not UserSession.objects.exists()  # signed out, and no replay signed in again
    assert AuditEvent.objects.filter(organization=org, action="signin.succeeded").count() == 1


def test_a_stolen_callback_for_a_fresh_state_in_another_browser_is_refused(acme, idp):
    org, _, _ = acme
    callback = through_idp(start_sso(Client()))  # the victim's browser started it
    assert Client().get(callback).status_code == 403  # the attacker's browser has no such state
    _nothing_written(org)


@pytest.mark.parametrize("email", ["ada@evil.com", "ada@sub.acme.com", "ada@acme.com.evil.com"])
def test_an_email_outside_the_verified_domains_never_joins(acme, idp, email):
    org, _, _ = acme
    idp.person = {**idp.person, "email": email}
    response = sso_sign_in(Client())
    assert response.status_code == 403
    assert not User.objects.filter(email=email).exists()
    _nothing_written(org)


def test_a_claimed_but_unverified_domain_routes_nobody(acme, idp):
    org, owner, _ = acme
    services.claim_domain(actor=owner_actor(org, owner), domain="acme.io")
    idp.requests.clear()
    response = Client().post("/login/", {"username": "ada@acme.io", "password": "", "next": ""})
    assert response.status_code == 200  # the password form again, not the IdP
    assert not idp.requests


def test_a_disabled_connection_signs_nobody_in(acme, idp):
    org, _, connection = acme
    callback = through_idp(start_sso(client := Client()))
    connection.enabled = False
    connection.save()
    assert client.get(callback).status_code == 404
    _nothing_written(org)


def test_an_operator_adds_an_oidc_connection_in_the_admin_and_people_sign_in_through_it(db, idp):
    """The operator's way in (the Django admin), not only the owner's Settings → Sign-in: the client secret is
    sealed and never shown again, an issuer the outbound guard refuses is refused, and the connection works."""
    org = factories.organization(name="Initech")
    VerifiedDomain.objects.create(organization=org, domain="initech.com", token="t", verified_at=timezone.now())
    operator = factories.user(is_staff=True, is_superuser=True)
    admin = Client()
    admin.force_login(operator)
    form = {"organization": org.pk, "slug": "initech", "protocol": "oidc", "display_name": "Initech SSO",
            "issuer_url": "http://10.0.0.1/realms/initech", "client_id": idp.client_id,
            "client_secret": idp.client_secret, "saml_metadata_url": "", "saml_metadata_xml": "", "enabled": "on",
            "default_role": "member", "role_claim": "groups", "role_map": "{}"}

    refused = admin.post("/admin/identity/oidcconnection/add/", form)
    assert refused.status_code == 200 and not OidcConnection.objects.exists()  # the guard said no, shown at the field

    response = admin.post("/admin/identity/oidcconnection/add/", {**form, "issuer_url": idp.issuer})
    assert response.status_code == 302, response.content.decode()[:2000]
    connection = OidcConnection.objects.get(organization=org)
    assert services.client_secret_of(connection) == idp.client_secret
    page = admin.get(f"/admin/identity/oidcconnection/{connection.pk}/change/").content.decode()
    assert idp.client_secret not in page and "sealed" in page

    idp.person = {**idp.person, "email": "ada@initech.com"}
    client = Client()
    assert sso_sign_in(client, "ada@initech.com").status_code == 302
    assert Membership.objects.get(organization=org, user__email="ada@initech.com").role == "member"
