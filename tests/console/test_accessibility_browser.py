"""An accessibility pass (vendored axe-core, tests/console/vendor/axe.min.js) over the chat surfaces, in Debian
chromium via Playwright against daphne + a real Celery worker: web chat (an empty chat with starter prompts, an
approval card, a drawn chart) and the Builder's test chat, in the light and the dark theme (the hosted page's pass is
tests/embeds/test_accessibility_browser.py).
No serious or critical violation (WCAG 2 A and AA rules): one walk through the chat, each state checked with every
rule in light and then switched to dark for the rules colours decide (tests/axe.py says why that is the same proof
as a second walk in dark)."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from tests import factories
from tests.axe import assert_clean_in_both_themes, with_axe
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000


def axe_page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light")
    with_axe(context)  # an init script: the console's Content-Security-Policy stays on
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    return page


def owner_with_agent(**spec):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Helper", **spec)
    return org, owner, agent


def test_web_chat_and_the_test_chat_have_no_serious_accessibility_violation(live_server_url, browser):
    _org, _owner, agent = owner_with_agent(
        capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}, {"id": "clock"}],
        starter_prompts=["Draw a chart please", "What time is it?"])
    page = axe_page(browser)
    sign_in(page, live_server_url, "owner@example.com")

    page.goto(f"{live_server_url}/chat/")
    page.locator("[data-starters]").wait_for()
    assert_clean_in_both_themes(page, "empty chat")
    page.get_by_role("button", name="Draw a chart please").click()
    page.locator("[data-approval]").wait_for()
    assert_clean_in_both_themes(page, "chat with an approval card")
    page.get_by_role("button", name="Approve").click()
    page.locator("svg.chart-svg").wait_for()
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    assert_clean_in_both_themes(page, "chat with a chart")
    page.screenshot(path=str(ARTIFACTS / "a11y-chat-light.png"), full_page=True)
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=str(ARTIFACTS / "a11y-chat-dark.png"), full_page=True)
    page.emulate_media(color_scheme="light")

    page.goto(f"{live_server_url}/agents/{agent.pk}/")
    chat = page.locator("[data-test-chat]")
    chat.get_by_label("Message to the draft").fill("What time is it?")
    chat.get_by_role("button", name="Send to the draft").click()
    chat.locator("[data-turn-usage]").wait_for()
    assert_clean_in_both_themes(page, "the Builder's test chat", "[data-test-chat]")
