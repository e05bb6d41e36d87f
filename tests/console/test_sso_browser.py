"""Single sign-on in a real browser (Debian chromium via Playwright, daphne) against the local OpenID Connect
provider: the owner verifies acme.com by its TXT record (a local DNS server) and configures the IdP in Settings →
Sign-in (the client secret never shown back); Ada types ada@acme.com on the sign-in page, signs in at the IdP's
page and lands in Acme's console as a member, her session listed as single sign-on; an expired ID token is
refused with the refusal page and nothing written."""

from __future__ import annotations

import pytest

from agenticos.models import Membership, User
from identity.models import OidcConnection, VerifiedDomain
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, sign_in
from tests.console.test_channels_console_browser import watch
from tests.fakes.dns_server import FakeDns
from tests.fakes.oidc_provider import OidcProvider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def idp():
    provider = OidcProvider(auto_approve=False).start()
    yield provider
    provider.stop()


@pytest.fixture
def fake_dns():
    server = FakeDns().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _live_sso_settings(monkeypatch, fake_dns):
    # Read by the daphne subprocess (autouse: set before live_server_url starts it).
    monkeypatch.setenv("SSO_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")  # the local IdP listens there
    monkeypatch.setenv("SSO_DNS_NAMESERVERS", f"127.0.0.1:{fake_dns.port}")


def single_sign_on(browser, base: str, email: str):
    """A person in a browser of their own types their company address on the sign-in page and is sent on to
    their organization's identity provider. Returns the page and its console errors."""
    page = browser.new_context().new_page()
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    page.goto(f"{base}/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_role("button", name="Continue with single sign-on").click()
    return page, errors


def test_an_owner_sets_up_sso_and_a_person_signs_in_through_it(live_server_url, browser, idp, fake_dns):
    org = factories.organization(name="Acme")
    factories.member(org, "owner", email="owner@acme.com", password=PASSWORD)
    base = live_server_url

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, "owner@acme.com", then="/settings/sign-in/")
    page.get_by_label("Domain", exact=True).fill("acme.com")
    page.get_by_role("button", name="Add the domain").click()
    page.locator('[data-domain="acme.com"]').get_by_text("not verified").wait_for()
    domain = VerifiedDomain.objects.get(organization=org)
    fake_dns.txt["acme.com"] = [f"agenticos-domain-verification={domain.token}"]
    page.locator('[data-domain="acme.com"]').get_by_role("button", name="Verify").click()
    page.locator('[data-domain="acme.com"]').get_by_text("verified", exact=True).wait_for()

    oidc = page.locator("[data-oidc-form]")  # the SAML form beside it has its own "Button label"
    oidc.get_by_label("Button label").fill("Acme SSO")
    oidc.get_by_label("Issuer URL").fill(idp.issuer)
    oidc.get_by_label("Client ID").fill(idp.client_id)
    oidc.get_by_label("Client secret").fill(idp.client_secret)
    oidc.get_by_role("button", name="Save single sign-on").click()
    page.locator("[data-callback-url]").wait_for()
    connection = OidcConnection.objects.get(organization=org)
    assert page.locator("[data-callback-url]").inner_text().endswith(f"/accounts/oidc/{connection.slug}/login/callback/")
    assert idp.client_secret not in page.content()
    page.screenshot(path=str(ARTIFACTS / "sso-settings.png"), full_page=True)
    assert errors == []

    # Ada, who has no account yet, signs in with her company address.
    ada, ada_errors = single_sign_on(browser, base, "ada@acme.com")
    ada.get_by_role("heading", name="Test identity provider").wait_for()
    ada.get_by_role("button", name="Continue as ada@acme.com").click()
    ada.wait_for_url(f"{base}/")
    person = User.objects.get(email="ada@acme.com")
    assert Membership.objects.get(organization=org, user=person).role == "member"
    ada.goto(f"{base}/settings/sessions/")
    assert ada.locator("[data-session]").count() == 1
    assert "Single sign-on" in ada.locator("[data-session]").inner_text()
    ada.screenshot(path=str(ARTIFACTS / "sso-sessions.png"), full_page=True)
    assert ada_errors == []

    # An expired ID token: the refusal page, and Grace is never created.
    idp.person = {"sub": "grace-2", "email": "grace@acme.com", "email_verified": True}
    idp.bend = {"expired": True}
    grace, _ = single_sign_on(browser, base, "grace@acme.com")
    grace.get_by_role("button", name="Continue as grace@acme.com").click()
    grace.locator("[data-sso-refused]").wait_for()
    assert not User.objects.filter(email="grace@acme.com").exists()
