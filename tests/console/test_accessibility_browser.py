"""An accessibility pass (vendored axe-core, tests/console/vendor/axe.min.js) over the chat surfaces, in Debian
chromium via Playwright against daphne + a real Celery worker: web chat (an empty chat with starter prompts, an
approval card, a drawn chart), the Builder's test chat, and an embed's hosted page, in the light and the dark theme.
No serious or critical violation (WCAG 2 A and AA rules)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenticos.models import Membership
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"


def themed_page(browser, scheme):
    # bypass_csp: axe is injected by the test as a script tag, which the console's policy would rightly refuse.
    page = browser.new_page(viewport={"width": 1440, "height": 900}, bypass_csp=True, color_scheme=scheme)
    page.set_default_timeout(TIMEOUT)
    return page


def serious_violations(page, context: str = "document") -> list[dict]:
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        """async (context) => {
            const target = context === 'document' ? document : document.querySelector(context);
            const r = await axe.run(target, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
                                             resultTypes: ['violations']});
            return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
              .map(v => ({id: v.id, impact: v.impact, help: v.help,
                          nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' — ' + n.failureSummary)}));
        }""", context)
    return result


def assert_clean(page, where: str, context: str = "document") -> None:
    found = serious_violations(page, context)
    assert found == [], f"{where}: " + json.dumps(found, indent=2)


def owner_with_agent(**spec):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Helper", **spec)
    return org, owner, agent


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_web_chat_and_the_test_chat_have_no_serious_accessibility_violation(live_server_url, browser, scheme):
    _org, _owner, agent = owner_with_agent(
        capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}, {"id": "clock"}],
        starter_prompts=["Draw a chart please", "What time is it?"])
    page = themed_page(browser, scheme)
    sign_in(page, live_server_url, "owner@example.com")

    page.goto(f"{live_server_url}/chat/")
    page.locator("[data-starters]").wait_for()
    assert_clean(page, f"empty chat ({scheme})")
    page.get_by_role("button", name="Draw a chart please").click()
    page.locator("[data-approval]").wait_for()
    assert_clean(page, f"chat with an approval card ({scheme})")
    page.get_by_role("button", name="Approve").click()
    page.locator("svg.chart-svg").wait_for()
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    assert_clean(page, f"chat with a chart ({scheme})")
    page.screenshot(path=str(ARTIFACTS / f"a11y-chat-{scheme}.png"), full_page=True)

    page.goto(f"{live_server_url}/agents/{agent.pk}/")
    chat = page.locator("[data-test-chat]")
    chat.get_by_label("Message to the draft").fill("What time is it?")
    chat.get_by_role("button", name="Send to the draft").click()
    chat.locator("[data-turn-usage]").wait_for()
    assert_clean(page, f"the Builder's test chat ({scheme})", "[data-test-chat]")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_hosted_page_has_no_serious_accessibility_violation(live_server_url, browser, scheme):
    _org, owner, agent = owner_with_agent(capabilities=[{"id": "clock"}])
    embed = factories.embed(agent, kind="page", created_by=owner, welcome="Welcome to **Acme** support.")
    page = themed_page(browser, scheme)
    page.goto(f"{live_server_url}/e/{embed.public_key}")
    page.wait_for_function("() => !document.getElementById('send').disabled")
    assert_clean(page, f"the hosted page ({scheme})")
    page.locator("#input").fill("What time is it?")
    page.locator("#send").click()
    page.wait_for_function("() => document.querySelectorAll('.turn.assistant').length && "
                           "!document.getElementById('send').disabled")
    assert_clean(page, f"the hosted page with an answer ({scheme})")
    page.screenshot(path=str(ARTIFACTS / f"a11y-hosted-page-{scheme}.png"), full_page=True)
