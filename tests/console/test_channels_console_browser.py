"""Channels in a real browser (Debian chromium via Playwright, daphne): a builder adds a Slack Events API bot
through the form (the fields follow the platform and transport), sees its manifest and write-only credentials,
and edits the binding's settings (a placeholder inserted at the cursor, a channel tool, the footer); a Telegram
bot's webhook is registered with a button at the fake Telegram, paused, resumed and deleted; a viewer sees it
read-only and an outsider gets 404 — with no console error on any page."""

from __future__ import annotations

import pytest

from channelbots import services
from channelbots.models import Binding, ChannelBot
from tests import factories
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, sign_in
from tests.fakes.telegram_api import FakeTelegram

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FRONTEND = "https://agents.example.com"


@pytest.fixture(autouse=True)
def _live_channel_settings(monkeypatch):
    # Read by the daphne subprocess's settings (autouse: set before live_server_url starts it).
    monkeypatch.setenv("FRONTEND_URL", FRONTEND)
    monkeypatch.setenv("CHANNEL_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")  # the fake Telegram listens there


def watch(page) -> list[str]:
    """Every console error, uncaught exception and failed response of the pages — except the browser's own
    /favicon.ico probe (console pages name their SVG icon; a page outside base.html may still be probed)."""
    errors: list[str] = []

    def on_console(message) -> None:
        if message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico"):
            errors.append(f"{message.text} ({message.location.get('url', '')})")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    return errors


def test_a_builder_adds_a_slack_bot_and_edits_its_binding_in_the_browser(live_server_url, browser):
    org = factories.organization(name="Acme")
    person = factories.member(org, "builder", email="chan@example.com", password=PASSWORD)
    agent = factories.published_agent(org, person, name="Shop")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, live_server_url, "chan@example.com")
    page.get_by_role("link", name="Channels").click()
    page.wait_for_url(f"{live_server_url}/channels/")
    page.get_by_label("Platform").select_option("slack")
    assert page.get_by_label("Outgoing-webhook token").is_hidden()
    page.get_by_label("Name").fill("Helpdesk")
    page.get_by_label("Events API (Slack calls this deployment)").check()
    assert page.get_by_label("App-level token xapp-… (Socket Mode, scope connections:write)").is_hidden()
    page.get_by_label("Bot token").fill("xoxb-browser-token-0001")
    page.get_by_label("Signing secret (Events API: Basic Information → App Credentials)").fill("s" * 32)
    page.get_by_role("button", name="Add the bot").click()
    bot = ChannelBot.objects.get(name="Helpdesk")
    page.wait_for_url(f"{live_server_url}/channels/{bot.pk}/")
    assert f"/api/v1/slack/{bot.pk}/events" in page.locator("[data-manifest]").inner_text()
    assert page.locator("[data-stored]").count() == 2
    assert "xoxb-browser-token-0001" not in page.content()
    page.screenshot(path=str(ARTIFACTS / "channels-bot.png"), full_page=True)

    services.create_binding(actor=_actor(person, org), agent=agent, data={"bot_id": str(bot.pk)})
    binding = Binding.objects.get(bot=bot)
    page.goto(f"{live_server_url}/agents/{agent.pk}/")
    page.locator("[data-binding-settings-link]").click()
    page.wait_for_url(f"{live_server_url}/agents/{agent.pk}/bindings/{binding.pk}/")
    box = page.get_by_label("Extra prompt")
    assert "Slack does not render Markdown" in box.input_value()
    box.fill("Hello ")
    box.press("End")
    page.get_by_role("button", name="{channel_name}").click()
    assert box.input_value() == "Hello {channel_name}"
    page.locator('[data-channel-tool="get_channel_info"]').check()
    page.get_by_label("Say what a turn cost").select_option("every_reply")
    page.get_by_role("button", name="Save the binding").click()
    page.wait_for_selector(".flash")
    binding.refresh_from_db()
    assert binding.extra_prompt == "Hello {channel_name}" and binding.channel_tools == ["get_channel_info"]
    assert binding.footer_mode == "every_reply"
    page.screenshot(path=str(ARTIFACTS / "channels-binding.png"), full_page=True)
    assert errors == []


def test_a_telegram_webhook_is_registered_with_a_button_and_viewers_and_outsiders_cannot_touch_it(
        live_server_url, browser):
    org = factories.organization(name="Acme")
    factories.member(org, "builder", email="tg@example.com", password=PASSWORD)
    factories.member(org, "viewer", email="look@example.com", password=PASSWORD)
    other = factories.organization(name="Other")
    factories.member(other, "owner", email="out@example.com", password=PASSWORD)

    with FakeTelegram() as telegram:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT)
        errors = watch(page)
        sign_in(page, live_server_url, "tg@example.com", then="/channels/")
        page.get_by_label("Platform").select_option("telegram")
        assert page.get_by_label("Signing secret (Events API: Basic Information → App Credentials)").is_hidden()
        page.get_by_label("Name").fill("Shop bot")
        page.get_by_label("Long polling").check()
        page.get_by_label("Bot token").fill(telegram.token)
        page.get_by_label("Server address").fill(telegram.url)
        page.get_by_label("Voice notes (speech to text)").select_option("groq:whisper-large-v3")
        page.get_by_role("button", name="Add the bot").click()
        bot = ChannelBot.objects.get(name="Shop bot")
        page.wait_for_url(f"{live_server_url}/channels/{bot.pk}/")
        assert (bot.transport, bot.stt_provider, bot.stt_model) == ("polling", "groq", "whisper-large-v3")
        assert telegram.webhook == {}

        page.get_by_role("button", name="Switch to a webhook and register it").click()
        page.wait_for_selector(".flash")
        assert "Telegram webhook registered" in page.locator(".flash").inner_text()
        bot.refresh_from_db()
        secret = services.reveal_credentials(bot)["webhook_secret"]
        assert telegram.webhook["url"] == f"{FRONTEND}/api/v1/telegram/{bot.pk}/webhook"
        assert telegram.webhook["secret_token"] == secret and bot.transport == "webhook"
        assert page.locator("[data-events-url]").input_value() == telegram.webhook["url"]
        assert secret not in page.content() and telegram.token not in page.content()

        page.get_by_role("button", name="Pause").click()
        page.wait_for_selector('[data-connection="paused"]')
        bot.refresh_from_db()
        assert bot.is_paused

        viewer = browser.new_page(viewport={"width": 1280, "height": 900})
        viewer.set_default_timeout(TIMEOUT)
        viewer_errors = watch(viewer)
        sign_in(viewer, live_server_url, "look@example.com")
        viewer.get_by_role("link", name="Channels").click()
        viewer.get_by_role("link", name="Shop bot").click()
        viewer.wait_for_url(f"{live_server_url}/channels/{bot.pk}/")
        assert viewer.get_by_role("button", name="Resume").count() == 0
        assert viewer.get_by_role("button", name="Delete").count() == 0
        assert viewer.get_by_label("Name").is_disabled()
        assert viewer_errors == []

        outsider = browser.new_page()
        outsider.set_default_timeout(TIMEOUT)
        sign_in(outsider, live_server_url, "out@example.com")
        assert outsider.goto(f"{live_server_url}/channels/{bot.pk}/").status == 404
        outsider.goto(f"{live_server_url}/channels/")
        assert "Shop bot" not in outsider.content()

        page.get_by_role("button", name="Resume").click()
        page.wait_for_selector('[data-connection="idle"]')
        page.get_by_role("button", name="Delete").click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()  # the page's confirmation dialog
        page.wait_for_url(f"{live_server_url}/channels/")
        assert not ChannelBot.objects.filter(pk=bot.pk).exists()
        assert errors == []


def _actor(user, org):
    from agenticos.models import Membership
    from agenticos.tenancy import actor_for_membership

    return actor_for_membership(Membership.objects.select_related("user", "organization").get(user=user, organization=org))
