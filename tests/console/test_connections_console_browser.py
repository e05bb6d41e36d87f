"""Connections in a real browser (Debian chromium via Playwright, daphne), against a local MCP server that wants a
bearer token: a builder adds the server with a vault credential and sees the tools it lists, checks it again,
reads what each database permission lets an agent do, follows the link to the remote agents; a viewer reads
with nothing to change; an outsider sees none of it — with no console error on any page."""

from __future__ import annotations

import pytest

from capabilities.models import McpConnection
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, sign_in
from tests.console.test_channels_console_browser import watch
from tests.fakes.mcp_server import FakeMCPServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TOKEN = "mcp-browser-token-51aa"


@pytest.fixture(autouse=True)
def _live_connection_settings(monkeypatch):
    monkeypatch.setenv("TOOL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")  # read by the daphne subprocess


@pytest.fixture
def mcp_server():
    server = FakeMCPServer(token=TOKEN).start()
    yield server
    server.stop()


def test_a_builder_adds_an_mcp_server_a_viewer_reads_connections_in_the_browser(live_server_url, browser,
                                                                                mcp_server):
    org = factories.organization(name="Acme")
    factories.member(org, "builder", email="cn-builder@example.com", password=PASSWORD)
    factories.member(org, "viewer", email="cn-viewer@example.com", password=PASSWORD)
    factories.member(factories.organization(name="Other"), "owner", email="cn-outsider@example.com", password=PASSWORD)
    factories.secret(org, name="mcp key", value=TOKEN)
    base = live_server_url

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, "cn-builder@example.com", then="/connections/")
    page.get_by_text("No MCP servers yet.").wait_for()
    assert page.locator('[data-consequence="write"]').first.is_visible()

    form = page.locator("[data-mcp-add]")
    form.get_by_label("Name").fill("fake")
    form.get_by_label("Server URL").fill(mcp_server.url)
    form.get_by_label("Credential from the vault").select_option(label="mcp key")
    form.locator("[data-mcp-submit]").click()
    page.wait_for_url(f"{base}/connections/#mcp-*")
    conn = McpConnection.objects.get(organization=org)
    card = page.locator(f'[data-mcp-connection="{conn.pk}"]')
    card.locator('[data-mcp-tool="add"]').wait_for()
    assert "fake_add" in card.inner_text() and "mcp key" in card.inner_text()
    assert f"Bearer {TOKEN}" in mcp_server.seen_auth and TOKEN not in page.content()

    card.locator("[data-mcp-check]").click()
    page.get_by_text("Checked fake").wait_for()
    page.screenshot(path=str(ARTIFACTS / "connections.png"), full_page=True)
    page.locator("[data-remote-agents-link]").click()
    page.wait_for_url(f"{base}/remote-agents/")

    viewer = browser.new_context().new_page()
    viewer.set_default_timeout(TIMEOUT)
    viewer_errors = watch(viewer)
    sign_in(viewer, base, "cn-viewer@example.com")
    viewer.goto(f"{base}/connections/")
    assert viewer.locator(f'[data-mcp-connection="{conn.pk}"]').is_visible()
    assert viewer.locator("[data-read-only]").is_visible()
    assert viewer.locator("[data-mcp-add]").count() == 0 and viewer.locator("[data-mcp-check]").count() == 0

    outsider = browser.new_context().new_page()
    outsider.set_default_timeout(TIMEOUT)
    sign_in(outsider, base, "cn-outsider@example.com")
    outsider.goto(f"{base}/connections/")
    assert outsider.locator(f'[data-mcp-connection="{conn.pk}"]').count() == 0
    assert errors == [] and viewer_errors == []
