"""An embed's page in a real browser (Debian chromium via Playwright, daphne) at 1440 px: a builder creates a widget
in Availability, opens its page, watches the live preview of the real widget follow the form before saving, saves,
and the widget script this deployment serves carries the new looks; switching to JWT shows the signing secret once.
A hosted page previews its title and welcome; a builder without edit access sees the page read-only; an outsider
gets 404 — with no console error on any page, the preview's frame included."""

from __future__ import annotations

import httpx
import pytest

from embeds.models import Embed
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, sign_in
from tests.console.test_channels_console_browser import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
VIEWPORT = {"width": 1440, "height": 1000}


def test_a_builder_edits_a_widget_with_its_live_preview_and_the_served_script_follows(live_server_url, browser):
    org = factories.organization(name="Acme")
    person = factories.member(org, "builder", email="embed@example.com", password=PASSWORD)
    agent = factories.published_agent(org, person, name="Shop")

    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, live_server_url, "embed@example.com", then=f"/agents/{agent.pk}/")
    page.get_by_label("Kind").select_option("widget")
    page.get_by_label("Name (for you)").fill("Shop site")
    page.get_by_label("Allowed origins (widget and socket)").fill("https://shop.example.com")
    page.get_by_role("button", name="Create the embed").click()
    page.wait_for_selector(".flash")
    embed = Embed.objects.get(agent=agent)
    assert f"/api/v1/embed/{embed.public_key}/ws" in page.locator("[data-embed-socket-url]").inner_text()

    page.locator("[data-embed-edit-link]").click()
    page.wait_for_url(f"{live_server_url}/agents/{agent.pk}/embeds/{embed.pk}/")
    preview = page.frame_locator("[data-embed-preview]")
    preview.get_by_text("Shop", exact=True).first.wait_for()  # the agent's name until a header is set

    page.get_by_label("Header", exact=True).fill("Ask the shop")
    page.get_by_label("What the launcher button says").fill("Need help?")
    page.get_by_label("Greeting").fill("Hello, **visitor**!")
    # Drawn by the real widget in the frame before anything is saved.
    preview.get_by_text("Ask the shop").wait_for()
    preview.get_by_text("Need help?").wait_for()
    preview.get_by_text("visitor").wait_for()
    embed.refresh_from_db()
    assert embed.title == ""
    # The preview answers itself: a message never reaches the agent.
    preview.get_by_placeholder("Ask a question…").fill("Hi")
    preview.get_by_placeholder("Ask a question…").press("Enter")
    preview.get_by_text("This is a preview of how it looks.").first.wait_for()

    page.get_by_role("button", name="Add a variable").click()
    rows = page.locator("[data-variable-row]")
    rows.nth(1).get_by_label("Variable name").fill("plan")
    rows.nth(0).get_by_label("Variable name").fill("locale")
    rows.nth(0).get_by_label("URL-safe").check()
    page.get_by_label("Messages per visitor per minute").fill("9")
    page.screenshot(path=str(ARTIFACTS / "embed-edit-preview.png"), full_page=True)
    page.get_by_role("button", name="Save the embed").click()
    page.wait_for_selector(".flash")
    embed.refresh_from_db()
    assert (embed.title, embed.launcher_text, embed.rate_limit_per_minute) == ("Ask the shop", "Need help?", 9)
    assert [(v["name"], v["url_safe"]) for v in embed.variables] == [("locale", True), ("plan", False)]

    script = httpx.get(f"{live_server_url}/api/v1/embed/{embed.public_key}/widget.js").text
    assert '"title": "Ask the shop"' in script and '"launcherText": "Need help?"' in script

    page.get_by_label("Visitors vouched for by your backend (JWT)").check()
    page.get_by_role("button", name="Save the embed").click()
    secret_box = page.get_by_label("Signing secret", exact=True)
    secret = secret_box.input_value()
    assert len(secret) >= 32
    page.screenshot(path=str(ARTIFACTS / "embed-secret-once.png"), full_page=True)
    page.goto(f"{live_server_url}/agents/{agent.pk}/embeds/{embed.pk}/")
    assert secret not in page.content() and page.locator("[data-new-secret]").count() == 0
    page.locator("[data-rotate-secret]").wait_for()
    assert errors == []


def test_a_hosted_page_previews_its_looks_and_others_cannot_change_it(live_server_url, browser):
    org = factories.organization(name="Acme")
    person = factories.member(org, "builder", email="pages@example.com", password=PASSWORD)
    factories.member(org, "builder", email="look@example.com", password=PASSWORD)
    other = factories.organization(name="Other")
    factories.member(other, "owner", email="out@example.com", password=PASSWORD)
    agent = factories.published_agent(org, person, name="Shop")
    hosted = factories.embed(agent, kind="page", created_by=person)
    address = f"{live_server_url}/agents/{agent.pk}/embeds/{hosted.pk}/"

    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, live_server_url, "pages@example.com")
    page.goto(address)
    preview = page.frame_locator("[data-embed-preview]")
    page.get_by_label("Page title").fill("Shop help")
    page.get_by_label("Welcome message (Markdown)").fill("Ask about **orders**.")
    preview.get_by_role("heading", name="Shop help").wait_for()
    preview.get_by_text("orders").wait_for()
    page.get_by_label("A button to start a new conversation").uncheck()
    page.get_by_role("button", name="Save the embed").click()
    page.wait_for_selector(".flash")
    config = httpx.get(f"{live_server_url}/api/v1/embed/{hosted.public_key}/config").json()
    assert (config["title"], config["welcome"], config["allowNewThread"]) == ("Shop help", "Ask about **orders**.",
                                                                               False)
    page.screenshot(path=str(ARTIFACTS / "embed-page-preview.png"), full_page=True)
    assert errors == []

    reader = browser.new_page(viewport=VIEWPORT)
    reader.set_default_timeout(TIMEOUT)
    reader_errors = watch(reader)
    sign_in(reader, live_server_url, "look@example.com")
    reader.goto(address)
    reader.locator("[data-read-only]").wait_for()
    assert reader.get_by_label("Page title").is_disabled()
    assert reader.get_by_role("button", name="Save the embed").count() == 0
    assert reader_errors == []

    outsider = browser.new_page(viewport=VIEWPORT)
    outsider.set_default_timeout(TIMEOUT)
    sign_in(outsider, live_server_url, "out@example.com")
    assert outsider.goto(address).status == 404
    assert outsider.goto(address + "preview/").status == 404
    hosted.refresh_from_db()
    assert hosted.title == "Shop help"
