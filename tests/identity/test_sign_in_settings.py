"""Settings → Sign-in and the services behind it: only owners change how the organization signs in; the client
secret is sealed and never shown; the issuer goes through the outbound guard; domains are verified by a TXT
record; another organization's domain or connection cannot be touched."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from agenticos import vault
from agenticos.errors import Conflict, Forbidden, Invalid, NotFound
from agenticos.models import AuditEvent
from agenticos.tenancy import Actor
from identity import services
from identity.models import OidcConnection, VerifiedDomain
from tests import factories
from tests.fakes.dns_server import FakeDns
from tests.identity.conftest import owner_actor

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _form(idp, **extra):
    return {"action": "save", "display_name": "Acme SSO", "issuer_url": idp.issuer, "client_id": idp.client_id,
            "client_secret": idp.client_secret, "default_role": "member", "role_claim": "groups", "role_map": "",
            "enabled": "on", **extra}


def test_an_owner_configures_sso_and_the_secret_is_sealed_and_never_shown(org, owner, idp):
    client = _client(owner)
    assert client.get("/settings/sign-in/").status_code == 200  # nothing configured yet
    response = client.post("/settings/sign-in/", _form(idp))
    assert response.status_code == 302
    connection = OidcConnection.objects.get(organization=org)
    assert idp.client_secret.encode() not in bytes(connection.ciphertext)
    assert services.client_secret_of(connection) == idp.client_secret
    page = client.get("/settings/sign-in/")
    assert page.status_code == 200
    assert idp.client_secret.encode() not in page.content
    assert f"/accounts/oidc/{connection.slug}/login/callback/".encode() in page.content
    event = AuditEvent.objects.get(organization=org, action="sso.created")
    assert "client_secret" in event.details["fields"] and idp.client_secret not in str(event.details)
    # Saving again without a secret keeps the sealed one.
    client.post("/settings/sign-in/", _form(idp, client_secret="", display_name="Acme login"))
    connection.refresh_from_db()
    assert connection.display_name == "Acme login" and services.client_secret_of(connection) == idp.client_secret
    assert AuditEvent.objects.filter(organization=org, action="sso.configured").exists()


@pytest.mark.parametrize("role", ["admin", "builder", "member", "viewer"])
def test_weaker_roles_cannot_see_or_change_sign_in(org, role, idp):
    person = factories.member(org, role)
    client = _client(person)
    assert client.get("/settings/sign-in/").status_code == 403
    assert client.post("/settings/sign-in/", _form(idp)).status_code == 403
    assert client.post("/settings/sign-in/", {"action": "domain", "domain": "acme.com"}).status_code == 403
    assert not OidcConnection.objects.exists() and not VerifiedDomain.objects.exists()
    assert b"/settings/sign-in/" not in client.get("/settings/").content


def test_an_outsider_cannot_touch_another_organizations_domain(org, owner, outsider, outsider_org):
    domain = services.claim_domain(actor=owner_actor(org, owner), domain="acme.com")
    client = _client(outsider)
    assert client.post(f"/settings/sign-in/domains/{domain.pk}", {"action": "remove"}).status_code == 404
    assert client.post(f"/settings/sign-in/domains/{domain.pk}", {"action": "verify"}).status_code == 404
    assert VerifiedDomain.objects.filter(pk=domain.pk).exists()
    with pytest.raises(NotFound):
        services.remove_domain(actor=owner_actor(outsider_org, outsider), domain=domain)


@pytest.mark.parametrize("issuer", [
    "http://169.254.169.254/latest",  # cloud metadata
    "http://10.0.0.8/realms/acme",  # a private address the operator did not list
    "http://[::ffff:127.0.0.1]:9/",  # loopback in IPv6 clothing
    "http://internal-idp.test/",  # a name resolving to a private address
])
def test_an_issuer_on_an_internal_address_is_refused_and_nothing_saved(org, owner, dns, settings, issuer):
    settings.SSO_ALLOWED_PRIVATE_HOSTS = []
    dns["internal-idp.test"] = ["192.168.1.20"]
    with pytest.raises(Invalid) as refused:
        services.configure_oidc(actor=owner_actor(org, owner), display_name="x", issuer_url=issuer,
                                client_id="c", client_secret="s3cr3t-value-xyz")
    assert refused.value.details["problems"][0]["field"] == "issuer_url"
    assert not OidcConnection.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="sso.").exists()


def test_an_issuer_naming_another_issuer_is_refused(org, owner, idp):
    with pytest.raises(Invalid):
        services.configure_oidc(actor=owner_actor(org, owner), display_name="x", issuer_url=idp.issuer + "/other",
                                client_id="c", client_secret="s3cr3t-value-xyz")
    assert not OidcConnection.objects.exists()


def test_a_role_map_naming_a_missing_role_or_owner_is_refused(org, owner, idp):
    for role_map in ({"eng": "superadmin"}, {"eng": "owner"}):
        with pytest.raises(Invalid):
            services.configure_oidc(actor=owner_actor(org, owner), display_name="x", issuer_url=idp.issuer,
                                    client_id="c", client_secret="s3cr3t-value-xyz", role_map=role_map)
    assert not OidcConnection.objects.exists()


def test_an_admin_actor_is_refused_by_the_service_too(org, admin_user, idp):
    actor = Actor(user=admin_user, organization=org, role="admin")
    with pytest.raises(Forbidden):
        services.configure_oidc(actor=actor, display_name="x", issuer_url=idp.issuer, client_id="c",
                                client_secret="s")
    with pytest.raises(Forbidden):
        services.claim_domain(actor=actor, domain="acme.com")


@pytest.fixture
def fake_dns(settings):
    server = FakeDns().start()
    settings.SSO_DNS_NAMESERVERS = [f"127.0.0.1:{server.port}"]
    yield server
    server.stop()


def test_a_domain_is_verified_by_its_txt_record(org, owner, fake_dns):
    actor = owner_actor(org, owner)
    domain = services.claim_domain(actor=actor, domain="Acme.COM.")
    assert domain.domain == "acme.com" and not domain.is_verified
    with pytest.raises(Invalid):
        services.verify_domain(actor=actor, domain=domain)  # nothing published yet
    fake_dns.txt["acme.com"] = ["v=spf1 -all", "agenticos-domain-verification=someone-elses-token"]
    with pytest.raises(Invalid):
        services.verify_domain(actor=actor, domain=domain)
    domain.refresh_from_db()
    assert not domain.is_verified
    fake_dns.txt["acme.com"].append(f"{services.TXT_PREFIX}{domain.token}")
    services.verify_domain(actor=actor, domain=domain)
    domain.refresh_from_db()
    assert domain.is_verified and "acme.com" in fake_dns.queries
    assert AuditEvent.objects.filter(organization=org, action="sso.domain_verified").exists()


def test_a_domain_another_organization_verified_cannot_be_claimed(org, owner, outsider_org):
    VerifiedDomain.objects.create(organization=outsider_org, domain="acme.com", token="x", verified_at=timezone.now())
    with pytest.raises(Conflict):
        services.claim_domain(actor=owner_actor(org, owner), domain="acme.com")
    assert not VerifiedDomain.objects.filter(organization=org).exists()


@pytest.mark.parametrize("raw", ["", "not a domain", "acme", "-acme.com", "a" * 64 + ".com", "acme.com/x"])
def test_a_malformed_domain_is_refused(org, owner, raw):
    with pytest.raises(Invalid):
        services.claim_domain(actor=owner_actor(org, owner), domain=raw)
    assert not VerifiedDomain.objects.exists()


def test_the_vault_binds_the_secret_to_its_organization(org, owner, outsider_org, idp):
    connection = services.configure_oidc(actor=owner_actor(org, owner), display_name="x", issuer_url=idp.issuer,
                                         client_id="c", client_secret="s3cr3t-value-xyz")
    with pytest.raises(vault.VaultError):
        vault.open_sealed(outsider_org.pk, connection.key_version, connection.wrapped_key, connection.ciphertext)
