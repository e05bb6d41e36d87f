"""Signing in with a passkey alone in a real browser (Debian chromium via Playwright, daphne), its authenticator
Chromium's own virtual one (the DevTools protocol's WebAuthn domain: resident keys, user verification): a member
adds a passkey in Settings → Two-factor, signs out, and signs in again with the passkey alone — no e-mail, no
password — landing in the console with the session listed as a passkey one. WebAuthn needs a secure context and a
domain as RP id: the page is opened at http://localhost."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from identity.models import UserSession
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT
from tests.console.test_channels_console_browser import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _localhost(monkeypatch):
    monkeypatch.setenv("ALLOWED_HOSTS", "127.0.0.1,localhost")  # read by the daphne subprocess


def _virtual_authenticator(page) -> None:
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
        "isUserVerified": True, "automaticPresenceSimulation": True}})


def test_a_member_adds_a_passkey_and_signs_in_with_it_alone(live_server_url, browser):
    org = factories.organization(name="Acme")
    member = factories.member(org, "member", email="ada@example.com", password=PASSWORD)
    base = live_server_url.replace("127.0.0.1", "localhost")

    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    _virtual_authenticator(page)
    page.goto(f"{base}/login/")
    page.get_by_label("Email").fill(member.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(f"{base}/")

    page.goto(f"{base}/settings/two-factor/")
    page.get_by_label("Name").fill("This laptop")
    page.get_by_role("button", name="Add a passkey").click()
    page.locator("[data-passkey]").get_by_text("This laptop").wait_for()

    context.clear_cookies()  # signed out; the virtual authenticator (of this tab) keeps the passkey
    page.goto(f"{base}/login/")
    page.get_by_role("button", name="Use a passkey").click()
    page.wait_for_url(f"{base}/")

    session = UserSession.objects.get(user=member, method="passkey")
    assert session.organization is None
    assert AuditEvent.objects.filter(organization=org, action="signin.succeeded", details__method="passkey").exists()
    page.goto(f"{base}/settings/sessions/")
    page.get_by_text("Passkey", exact=True).first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "passkey-sign-in.png"), full_page=True)
    assert errors == []
    context.close()
