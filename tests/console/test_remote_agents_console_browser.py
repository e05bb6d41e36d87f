"""Connections → Remote agents in a real browser (Debian chromium via Playwright, daphne), against a local A2A
agent that wants a key: a builder's address with a password is refused and never shown back, then the agent is
registered with a vault secret as its key and listed without it; a viewer sees it read-only, an outsider gets 404,
and the builder deletes it — with no console error on any page."""

from __future__ import annotations

import pytest

from capabilities.remote_agents.models import RemoteAgent
from tests import factories
from tests.capabilities.test_remote_agents_a2a_fake import CARD_PATH, FakeA2AAgent
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, sign_in
from tests.console.test_channels_console_browser import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
KEY = "a2a-partner-key-browser-77d1"


@pytest.fixture(autouse=True)
def _live_remote_agent_settings(monkeypatch):
    # Read by the daphne subprocess (autouse: set before live_server_url starts it).
    monkeypatch.setenv("TOOL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")  # the fake agent listens there
    monkeypatch.setenv("REMOTE_AGENT_PLAIN_HTTP_HOSTS", "127.0.0.1")  # and has no TLS: the operator lists it


@pytest.fixture
def keyed_agent():
    agent = FakeA2AAgent(key=KEY).start()
    yield agent
    agent.stop()


def test_a_builder_registers_and_deletes_a_remote_agent_a_viewer_reads_it_in_the_browser(live_server_url, browser,
                                                                                          keyed_agent):
    org = factories.organization(name="Acme")
    factories.member(org, "builder", email="ra-builder@example.com", password=PASSWORD)
    factories.member(org, "viewer", email="ra-viewer@example.com", password=PASSWORD)
    factories.member(factories.organization(name="Other"), "owner", email="ra-outsider@example.com", password=PASSWORD)
    secret = factories.secret(org, name="partner key", value=KEY)
    base = live_server_url

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, "ra-builder@example.com", then="/remote-agents/")
    page.get_by_text("No remote agents yet.").wait_for()

    # A password in the address: refused before anything is sent, and not given back.
    page.get_by_label("Agent card URL").fill(f"http://alice:hunter2-pass@127.0.0.1:{keyed_agent.port}{CARD_PATH}")
    page.get_by_label("Key").select_option(label="partner key")
    with page.expect_response(lambda r: r.request.method == "POST") as refused:
        page.get_by_role("button", name="Register").click()
    assert refused.value.status == 422
    # The refused form's own answer is expected: its response (and the browser's console note of that status,
    # which may come a moment later) are the only errors the page may have; they are set aside at the end.
    assert f"422 {base}/remote-agents/" in errors
    page.locator('[data-error-field="card_url"]').wait_for()
    assert "hunter2-pass" not in page.content() and keyed_agent.seen == []

    page.get_by_label("Agent card URL").fill(keyed_agent.card_url)
    page.get_by_label("Key").select_option(label="partner key")
    page.get_by_role("button", name="Register").click()
    page.wait_for_url(f"{base}/remote-agents/*/")
    row = RemoteAgent.objects.get(organization=org)
    assert row.secret_id == secret.pk and keyed_agent.seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert page.get_by_role("heading", name="Weather Desk").is_visible()
    assert page.locator("[data-endpoint-url]").inner_text() == keyed_agent.rpc_url
    assert page.locator(f'[data-key="{secret.pk}"]').inner_text() == "partner key"
    assert KEY not in page.content()
    page.get_by_role("link", name="← Remote agents").click()
    page.wait_for_url(f"{base}/remote-agents/")
    assert page.locator(f'[data-remote-agent="{row.pk}"]').get_by_role("link", name="Weather Desk").is_visible()
    page.screenshot(path=str(ARTIFACTS / "remote-agents-list.png"), full_page=True)

    # A viewer sees it and has nothing to change it with.
    viewer = browser.new_context().new_page()
    viewer.set_default_timeout(TIMEOUT)
    viewer_errors = watch(viewer)
    sign_in(viewer, base, "ra-viewer@example.com")
    viewer.goto(f"{base}/remote-agents/")
    assert viewer.locator(f'[data-remote-agent="{row.pk}"]').is_visible()
    assert viewer.locator("[data-read-only]").is_visible() and viewer.locator("[data-register]").count() == 0
    viewer.get_by_role("link", name="Weather Desk").click()
    viewer.wait_for_url(f"{base}/remote-agents/{row.pk}/")
    assert viewer.locator("[data-delete]").count() == 0 and viewer.locator("[data-update]").count() == 0

    # An outsider: not found.
    outsider = browser.new_context().new_page()
    outsider.set_default_timeout(TIMEOUT)
    sign_in(outsider, base, "ra-outsider@example.com")
    assert outsider.goto(f"{base}/remote-agents/{row.pk}/").status == 404
    outsider.goto(f"{base}/remote-agents/")
    assert outsider.locator(f'[data-remote-agent="{row.pk}"]').count() == 0

    # The builder deletes it.
    page.get_by_role("link", name="Weather Desk").click()
    page.wait_for_url(f"{base}/remote-agents/{row.pk}/")
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()  # the page's confirmation dialog
    page.wait_for_url(f"{base}/remote-agents/")
    page.get_by_text("No remote agents yet.").wait_for()
    assert not RemoteAgent.objects.filter(pk=row.pk).exists()
    refused_form = f"{base}/remote-agents/"
    assert [e for e in errors if not ("422" in e and refused_form in e)] == [] and viewer_errors == []
