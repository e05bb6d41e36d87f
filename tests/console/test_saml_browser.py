"""SAML single sign-on in a real browser (Debian chromium via Playwright, daphne) against the local SAML 2.0 IdP
(metadata, HTTP-Redirect AuthnRequests, HTTP-POST Responses XML-signed with its own key — the auto-submitting form
a real IdP sends): the owner configures the IdP by its metadata URL in Settings → Sign-in and sees what to register
there; Ada types ada@acme.com on the sign-in page, passes the IdP and lands in Acme's console as a member, her
session listed as single sign-on; an assertion for another audience is refused with the refusal page and nothing
written (issue 43: "a browser test that signs in through each, end to end")."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agenticos.models import Membership, User
from identity.models import OidcConnection, VerifiedDomain
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, sign_in
from tests.console.test_channels_console_browser import watch
from tests.console.test_sso_browser import single_sign_on
from tests.fakes.saml_idp import SamlIdp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def idp():
    server = SamlIdp(name="acme-idp").start()
    server.person, server.bend = {"email": "ada@acme.com", "groups": []}, {}
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _live_sso_settings(monkeypatch):
    # Read by the daphne subprocess (autouse: set before live_server_url starts it).
    monkeypatch.setenv("SSO_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")  # the local IdP listens there


def test_an_owner_sets_up_saml_and_a_person_signs_in_through_it(live_server_url, browser, idp):
    org = factories.organization(name="Acme")
    factories.member(org, "owner", email="owner@acme.com", password=PASSWORD)
    # The domain's TXT verification is the OIDC browser test's; here the domain is verified already.
    VerifiedDomain.objects.create(organization=org, domain="acme.com", token="t", verified_at=timezone.now())
    base = live_server_url

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, "owner@acme.com", then="/settings/sign-in/")
    saml = page.locator("[data-saml-form]")
    saml.get_by_label("Button label").fill("Acme SAML")
    saml.get_by_label("IdP metadata URL").fill(f"{idp.base}/metadata")
    saml.get_by_role("button", name="Save SAML sign-on").click()
    page.locator("[data-saml-acs]").wait_for()
    connection = OidcConnection.objects.get(organization=org)
    assert connection.protocol == "saml" and connection.saml_entity_id == idp.entity_id
    assert page.locator("[data-saml-acs]").inner_text().endswith(f"/accounts/saml/{connection.slug}/acs/")
    assert "PRIVATE KEY" not in page.content()  # the SP key is sealed, never shown
    page.screenshot(path=str(ARTIFACTS / "saml-settings.png"), full_page=True)
    assert errors == []

    # Ada, who has no account yet, signs in with her company address: to the IdP and back through its form.
    ada, ada_errors = single_sign_on(browser, base, "ada@acme.com")
    ada.wait_for_url(f"{base}/")
    person = User.objects.get(email="ada@acme.com")
    assert Membership.objects.get(organization=org, user=person).role == "member"
    assert len(idp.authn_requests) == 1  # one signed AuthnRequest reached the IdP
    ada.goto(f"{base}/settings/sessions/")
    assert ada.locator("[data-session]").count() == 1
    assert "Single sign-on" in ada.locator("[data-session]").inner_text()
    ada.screenshot(path=str(ARTIFACTS / "saml-sessions.png"), full_page=True)
    assert ada_errors == []

    # An assertion for another audience: the refusal page, and Grace is never created.
    idp.person, idp.bend = {"email": "grace@acme.com", "groups": []}, {"audience": "https://elsewhere.example/"}
    grace, _ = single_sign_on(browser, base, "grace@acme.com")
    grace.locator("[data-sso-refused]").wait_for()
    assert not User.objects.filter(email="grace@acme.com").exists()
