"""Single sign-on through an organization's SAML 2.0 IdP (a real local one: metadata, HTTP-Redirect AuthnRequests,
HTTP-POST Responses XML-signed with its own key): the e-mail's verified domain picks the IdP, a first sign-in joins
just in time with its group's role, and every bent answer — unsigned, tampered after signing, signed by another key,
for another audience, expired, replayed, from another organization's IdP, for an e-mail outside the verified
domains — is refused with nothing written."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from allauth.socialaccount.models import SocialAccount
from django.test import Client
from django.utils import timezone

from agenticos.models import AuditEvent, Membership, User
from identity import services
from identity.models import OidcConnection, UserSession, VerifiedDomain
from tests import factories
from tests.fakes.saml_idp import SamlIdp, form_fields
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db
HOST = "agenticos.example.com"


@pytest.fixture(scope="module")
def saml_servers():
    acme_idp, globex_idp = SamlIdp(name="acme-idp").start(), SamlIdp(name="globex-idp").start()
    yield acme_idp, globex_idp
    acme_idp.stop()
    globex_idp.stop()


@pytest.fixture
def idps(saml_servers, settings):
    settings.SSO_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, HOST]
    for idp in saml_servers:
        idp.person, idp.bend = {"email": "ada@acme.com", "groups": []}, {}
        idp.requests.clear()
        idp.authn_requests.clear()
    return saml_servers


def _org_with_saml(name: str, domain: str, idp: SamlIdp, **kwargs):
    org = factories.organization(name=name)
    owner = factories.member(org, "owner", email=f"owner@{domain}")
    VerifiedDomain.objects.create(organization=org, domain=domain, token="t", verified_at=timezone.now())
    connection = services.configure_saml(actor=owner_actor(org, owner), display_name=f"{name} SAML",
                                         metadata_url=f"{idp.base}/metadata", **kwargs)
    return org, owner, connection


@pytest.fixture
def acme(db, idps):
    return _org_with_saml("Acme", "acme.com", idps[0])


@pytest.fixture
def globex(db, idps):
    return _org_with_saml("Globex", "globex.com", idps[1])


def browser() -> Client:
    # A browser always sends Host; python3-saml reads it, and refuses single-label hosts such as "testserver".
    return Client(HTTP_HOST=HOST)


def start_sso(client: Client, email: str = "ada@acme.com") -> str:
    response = client.post("/login/", {"username": email, "password": "", "next": ""})
    assert response.status_code == 302, response.content[:500]
    return response["Location"]


def idp_form(location: str) -> tuple[str, dict[str, str]]:
    """What the browser does at the IdP: follow the HTTP-Redirect, receive the HTTP-POST form."""
    page = httpx.get(location)
    assert page.status_code == 200, page.text
    return form_fields(page.text)


def post_to_acs(client: Client, action: str, fields: dict[str, str]):
    """The browser submits the form to the ACS, which hands over to allauth's finishing step."""
    first = client.post(urlsplit(action).path, fields)
    assert first.status_code == 302, first.content[:300]
    return client.get(first["Location"])


def saml_sign_in(client: Client, email: str = "ada@acme.com"):
    return post_to_acs(client, *idp_form(start_sso(client, email)))


def _nothing_written(org) -> None:
    assert not User.objects.filter(email__in=["ada@acme.com", "mallory@acme.com"]).exists()
    assert not SocialAccount.objects.exists()
    assert not Membership.objects.filter(organization=org).exclude(role="owner").exists()
    assert not UserSession.objects.exists()


def test_the_metadata_url_is_read_once_and_the_sp_key_is_sealed(acme, idps):
    _, _, connection = acme
    assert connection.protocol == "saml"
    assert connection.saml_entity_id == idps[0].entity_id and connection.saml_sso_url == f"{idps[0].base}/sso"
    assert connection.saml_idp_cert.replace("\n", "") in idps[0].cert.replace("\n", "")
    assert b"PRIVATE KEY" not in bytes(connection.ciphertext)
    assert services.client_secret_of(connection).startswith("-----BEGIN PRIVATE KEY-----")


def test_an_email_of_a_verified_domain_is_sent_to_its_idp_with_a_signed_authn_request(acme, idps):
    _, _, connection = acme
    location = start_sso(browser())
    parts = urlsplit(location)
    query = parse_qs(parts.query)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{idps[0].base}/sso"
    assert query["SigAlg"] == ["http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"] and query["Signature"][0]
    request = idps[0].decode_authn_request({k: v[0] for k, v in query.items()})
    assert request["acs"] == f"http://agenticos.example.com/accounts/saml/{connection.slug}/acs/"
    assert request["issuer"] == f"http://agenticos.example.com/accounts/saml/{connection.slug}/metadata/"


def test_a_first_saml_sign_in_joins_the_organization_with_its_default_role(acme, idps):
    org, _, _ = acme
    client = browser()
    response = saml_sign_in(client)
    assert response.status_code == 302 and response["Location"] == "/", response.content[:500]
    ada = User.objects.get(email="ada@acme.com")
    assert Membership.objects.get(organization=org, user=ada).role == "member"
    assert client.get("/").status_code == 200
    actions = set(AuditEvent.objects.filter(organization=org).values_list("action", flat=True))
    assert {"member.joined_by_sso", "signin.succeeded"} <= actions
    session = UserSession.objects.get(user=ada)
    assert session.method == "sso" and session.organization == org


def test_a_group_attribute_mapped_to_a_role_gives_that_role(acme, idps):
    org, owner, _ = acme
    services.configure_saml(actor=owner_actor(org, owner), display_name="Acme SAML", role_claim="groups",
                            role_map={"eng": "builder"})
    idps[0].person = {"email": "ada@acme.com", "groups": ["Everyone", "eng"]}
    assert saml_sign_in(browser()).status_code == 302
    assert Membership.objects.get(organization=org, user__email="ada@acme.com").role == "builder"


@pytest.mark.parametrize("bend", [
    {"unsigned": True}, {"tamper": True}, {"foreign_key": True}, {"audience": "https://someone-else.example/sp"},
    {"expired": True},
], ids=["unsigned", "tampered", "signed-by-another-key", "wrong-audience", "expired"])
def test_a_bent_response_is_refused_with_nothing_written(acme, idps, bend):
    org, _, _ = acme
    idps[0].bend = bend
    response = saml_sign_in(browser())
    assert response.status_code == 403
    assert b"data-sso-refused" in response.content
    _nothing_written(org)
    # python3-saml refused it and allauth told the adapter, which kept the attempt for Acme's auditors.
    failure = AuditEvent.objects.get(organization=org, action="signin.failed")
    assert failure.details["method"] == "sso" and failure.details["reason"].startswith("provider error")


def test_a_replayed_response_is_refused(acme, idps):
    org, _, _ = acme
    client = browser()
    action, fields = idp_form(start_sso(client))
    assert post_to_acs(client, action, fields).status_code == 302
    client.logout()
    assert post_to_acs(client, action, fields).status_code == 403  # the request's state was used up
    assert post_to_acs(browser(), action, fields).status_code == 403  # and another browser has none
    assert AuditEvent.objects.filter(organization=org, action="signin.succeeded").count() == 1
    assert not UserSession.objects.exists()


@pytest.mark.parametrize("email", ["ada@evil.com", "ada@sub.acme.com", "ada@acme.io"])
def test_an_email_outside_the_verified_domains_never_joins(acme, idps, email):
    org, owner, _ = acme
    services.claim_domain(actor=owner_actor(org, owner), domain="acme.io")  # claimed, never verified
    idps[0].person = {"email": email, "groups": []}
    response = saml_sign_in(browser())
    assert response.status_code == 403
    assert not User.objects.filter(email=email).exists()
    _nothing_written(org)
    assert AuditEvent.objects.filter(organization=org, action="signin.failed").exists()


def test_another_organizations_idp_cannot_sign_into_this_one(acme, globex, idps):
    org, _, _ = acme
    acme_idp, globex_idp = idps
    client = browser()
    location = start_sso(client)  # an AuthnRequest of Acme's
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    # Globex's IdP (a real, configured one — of another organization) answers Acme's request.
    page = globex_idp.answer(query)
    assert post_to_acs(client, *form_fields(page)).status_code == 403
    _nothing_written(org)


def test_another_organizations_idp_cannot_vouch_for_this_ones_domain(acme, globex, idps):
    org, _, _ = acme
    globex_org, _, globex_connection = globex
    idps[1].person = {"email": "ada@acme.com", "groups": []}
    client = browser()
    # Straight to Globex's SAML login (the sign-in page would have sent acme.com to Acme's IdP).
    start = client.get(f"/accounts/saml/{globex_connection.slug}/login/?process=login")
    location = start["Location"] if start.status_code == 302 else None
    if location is None:  # allauth asks for a POST to start a login
        location = client.post(f"/accounts/saml/{globex_connection.slug}/login/", {"process": "login"})["Location"]
    assert post_to_acs(client, *idp_form(location)).status_code == 403
    _nothing_written(org)
    assert not Membership.objects.filter(organization=globex_org).exclude(role="owner").exists()


def test_the_sp_metadata_shows_the_certificate_and_never_the_key(acme):
    _, _, connection = acme
    response = browser().get(f"/accounts/saml/{connection.slug}/metadata/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "X509Certificate" in body and "PRIVATE KEY" not in body
    assert f"/accounts/saml/{connection.slug}/acs/" in body


def test_an_oidc_route_does_not_reach_a_saml_connection(acme):
    _, _, connection = acme
    assert browser().post(f"/accounts/oidc/{connection.slug}/login/").status_code == 404
    assert OidcConnection.objects.filter(protocol="saml").count() == 1


# ------------------------------------------------------------------ Settings → Sign-in and the operator's admin


def _signed_in(user) -> Client:
    client = browser()
    client.force_login(user)
    return client


def _saml_form(idp: SamlIdp, **extra) -> dict[str, str]:
    return {"action": "save_saml", "display_name": "Acme SAML", "metadata_url": f"{idp.base}/metadata",
            "metadata_xml": "", "default_role": "member", "role_claim": "groups", "role_map": "", "enabled": "on",
            **extra}


def test_an_owner_configures_saml_by_url_or_by_xml_and_sees_what_to_register(db, idps):
    org = factories.organization(name="Initech")
    owner = factories.member(org, "owner")
    client = _signed_in(owner)
    assert client.post("/settings/sign-in/", _saml_form(idps[0])).status_code == 302
    connection = OidcConnection.objects.get(organization=org)
    assert connection.protocol == "saml" and connection.saml_entity_id == idps[0].entity_id
    page = client.get("/settings/sign-in/")
    assert f"/accounts/saml/{connection.slug}/acs/".encode() in page.content
    assert b"PRIVATE KEY" not in page.content and b"data-oidc-form" not in page.content
    # The owner pastes the other IdP's metadata instead: read from the XML, no fetch.
    idps[1].requests.clear()
    assert client.post("/settings/sign-in/", _saml_form(idps[0], metadata_url="",
                                                       metadata_xml=idps[1].metadata())).status_code == 302
    connection.refresh_from_db()
    assert connection.saml_entity_id == idps[1].entity_id and not idps[1].requests
    assert set(AuditEvent.objects.filter(organization=org).values_list("action", flat=True)) >= {
        "sso.created", "sso.configured"}


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.5/metadata",
                                 "http://[::1]:8000/metadata"])
def test_a_metadata_url_to_a_private_address_is_refused_by_the_guard(db, idps, url, settings):
    settings.SSO_ALLOWED_PRIVATE_HOSTS = []
    org = factories.organization(name="Initech")
    client = _signed_in(factories.member(org, "owner"))
    response = client.post("/settings/sign-in/", _saml_form(idps[0], metadata_url=url))
    assert response.status_code == 422
    assert not OidcConnection.objects.filter(organization=org).exists()


def test_metadata_that_is_not_metadata_is_refused(db, idps):
    org = factories.organization(name="Initech")
    client = _signed_in(factories.member(org, "owner"))
    for xml in ("<notmetadata/>", '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>', "{}"):
        response = client.post("/settings/sign-in/", _saml_form(idps[0], metadata_url="", metadata_xml=xml))
        assert response.status_code == 422
    assert not OidcConnection.objects.filter(organization=org).exists()


@pytest.mark.parametrize("role", ["admin", "builder", "member", "viewer"])
def test_weaker_roles_cannot_configure_saml(acme, idps, role):
    org, _, connection = acme
    person = factories.member(org, role)
    client = _signed_in(person)
    assert client.get("/settings/sign-in/").status_code == 403
    assert client.post("/settings/sign-in/", _saml_form(idps[1])).status_code == 403
    connection.refresh_from_db()
    assert connection.saml_entity_id == idps[0].entity_id


def test_an_outsider_owner_configures_only_their_own_organization(acme, idps):
    org, _, connection = acme
    outsider_org = factories.organization(name="Outsider")
    outsider = factories.member(outsider_org, "owner")
    client = _signed_in(outsider)
    assert b"data-saml-acs" not in client.get("/settings/sign-in/").content  # Acme's connection is not shown
    assert client.post("/settings/sign-in/", _saml_form(idps[1])).status_code == 302
    connection.refresh_from_db()
    assert connection.saml_entity_id == idps[0].entity_id
    assert OidcConnection.objects.get(organization=outsider_org).saml_entity_id == idps[1].entity_id


def test_an_oidc_organization_must_remove_it_before_saml(db, idps):
    from agenticos.errors import Conflict

    org, owner, _ = _org_with_saml("Initech", "initech.com", idps[0])
    with pytest.raises(Conflict):
        services.configure_oidc(actor=owner_actor(org, owner), display_name="x", issuer_url="https://idp.example",
                                client_id="c", client_secret="s")


def test_an_operator_adds_a_saml_connection_in_the_admin(db, idps):
    org = factories.organization(name="Initech")
    operator = factories.user(is_staff=True, is_superuser=True)
    client = _signed_in(operator)
    response = client.post("/admin/identity/oidcconnection/add/", {
        "organization": org.pk, "slug": "initech", "protocol": "saml", "display_name": "Initech SAML",
        "issuer_url": "", "client_id": "", "saml_metadata_url": f"{idps[0].base}/metadata", "saml_metadata_xml": "",
        "enabled": "on", "default_role": "member", "role_claim": "groups", "role_map": "{}"})
    assert response.status_code == 302, response.content.decode()[:2000]
    connection = OidcConnection.objects.get(organization=org)
    assert connection.saml_entity_id == idps[0].entity_id and connection.saml_sp_cert
    assert services.client_secret_of(connection).startswith("-----BEGIN PRIVATE KEY-----")
