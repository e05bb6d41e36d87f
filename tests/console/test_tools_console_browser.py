"""Tools → custom tools in a real browser (Debian chromium via Playwright, daphne), against a local fake REST
API that wants a bearer token: a builder builds a tool by hand (the URL's path parameter highlighted as typed),
saves it with a vault credential, presses Test and sees the compact preview of a real call that carried the
credential — whose value is on no page; installs a template as a copy and opens the AI tool builder; a viewer
reads the tool with nothing to change it with; an outsider gets 404 — with no console error on any page."""

from __future__ import annotations

import pytest

from capabilities.models import CustomTool
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, sign_in
from tests.console.test_channels_console_browser import watch
from tests.fakes.rest_api import FakeRestAPI

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _live_tool_settings(monkeypatch):
    monkeypatch.setenv("TOOL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")  # read by the daphne subprocess


@pytest.fixture
def rest_api():
    server = FakeRestAPI().start()
    yield server
    server.stop()


def test_a_builder_builds_and_tests_a_tool_a_viewer_reads_it_in_the_browser(live_server_url, browser, rest_api):
    org = factories.organization(name="Acme")
    factories.member(org, "builder", email="tl-builder@example.com", password=PASSWORD)
    factories.member(org, "viewer", email="tl-viewer@example.com", password=PASSWORD)
    factories.member(factories.organization(name="Other"), "owner", email="tl-outsider@example.com", password=PASSWORD)
    factories.secret(org, name="crm key", value=rest_api.secret)
    base = live_server_url

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, "tl-builder@example.com", then="/tools/")
    page.get_by_text("No custom tools yet").wait_for()
    page.locator("[data-new-tool]").click()
    page.wait_for_url(f"{base}/tools/new")

    page.locator('input[name="name"]').fill("Get contact")
    page.locator('input[name="alias"]').fill("get_contact")
    page.locator('textarea[name="description"]').fill("Loads one contact by id.")
    page.locator("[data-url-input]").fill(f"{rest_api.base}/echo/contacts/{{contact_id}}")
    page.locator('[data-url-preview] mark[data-path-param="contact_id"]').wait_for()  # highlighted as typed
    row = page.locator('[data-param-row="0"]')
    row.locator('input[name="p-0-name"]').fill("contact_id")
    row.locator('select[name="p-0-location"]').select_option("path")
    row.locator('input[name="p-0-required"]').check()
    page.locator("[data-add-param]").click()
    assert page.locator('input[name="p-3-name"]').count() == 1  # one more row than the three blank ones
    page.get_by_label("Credential from the vault").select_option(label="crm key")
    page.get_by_label("How it is injected").select_option("header")
    assert page.get_by_label("Header name").is_visible() and not page.get_by_label("Query parameter name").is_visible()
    page.locator('input[name="w-0-text"]').fill("Ids are numeric.")
    page.locator("[data-save]").click()
    page.wait_for_url(f"{base}/tools/*/")
    tool = CustomTool.objects.get(organization=org)
    assert tool.credential.name == "crm key"

    page.locator("#arg-contact_id").fill("42")
    page.locator("[data-test-button]").click()
    page.locator("[data-test-result]").wait_for()
    assert page.locator("[data-test-result]").get_attribute("data-test-ok") == "true"
    assert "/echo/contacts/42" in page.locator("[data-test-preview]").inner_text()
    assert rest_api.requests[-1].headers["Authorization"] == f"Bearer {rest_api.secret}"
    assert rest_api.secret not in page.content()
    page.screenshot(path=str(ARTIFACTS / "tools-test-call.png"), full_page=True)

    # The gallery: a template installed as an editable copy, then the list grouped by provider.
    page.goto(f"{base}/tools/#gallery")
    page.locator('[data-template="github_list_issues"] [data-install]').click()
    page.wait_for_url(f"{base}/tools/*/")
    page.goto(f"{base}/tools/")
    page.locator('[data-tool-group="GitHub"]').wait_for()
    assert rest_api.secret not in page.content()
    page.screenshot(path=str(ARTIFACTS / "tools-list.png"), full_page=True)

    # The AI tool builder: a session with its Kit Guide.
    page.get_by_role("link", name="AI tool builder").first.click()
    page.get_by_label("Title").fill("CRM tools")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{base}/tools/ai/*/")
    page.get_by_role("heading", name="Kit Guide").wait_for()
    assert page.locator("[data-say]").is_visible()

    # A viewer reads the tool; nothing changes it.
    viewer = browser.new_context().new_page()
    viewer.set_default_timeout(TIMEOUT)
    viewer_errors = watch(viewer)
    sign_in(viewer, base, "tl-viewer@example.com")
    viewer.goto(f"{base}/tools/{tool.pk}/")
    assert viewer.locator("[data-read-only]").is_visible()
    assert viewer.locator("[data-test-button]").count() == 0 and viewer.locator("[data-save]").count() == 0
    assert viewer.locator('input[name="alias"]').is_disabled()

    # An outsider: not found.
    outsider = browser.new_context().new_page()
    outsider.set_default_timeout(TIMEOUT)
    sign_in(outsider, base, "tl-outsider@example.com")
    assert outsider.goto(f"{base}/tools/{tool.pk}/").status == 404
    outsider.goto(f"{base}/tools/")
    assert outsider.locator(f'[data-tool="{tool.pk}"]').count() == 0
    assert errors == [] and viewer_errors == []
