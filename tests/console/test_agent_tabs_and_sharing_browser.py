"""Issue 44 §9, §1 (grants) and §7 (e-mail) as a person clicks them, in Debian's chromium against daphne, at 1440 and
390 px: the home page's first-run checklist says what is left and where to do it; the agent's tab bar is the same
on its Triggers, Evaluations and Builder pages and takes the person between them; a collection's Sharing card gives
a colleague access in plain words and takes it away; the Notifications page keeps the e-mail choice. Each page
passes axe (WCAG 2 A/AA, serious and critical), nothing scrolls sideways, and no console error."""

from __future__ import annotations

import pytest

from knowledge.models import Collection
from tests import factories
from tests.axe import assert_clean
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT
from tests.console.test_channels_console_browser import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.parametrize("width", [1440, 390])
def test_a_builder_follows_the_checklist_the_agent_tabs_and_shares_a_collection(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    owner = factories.member(org, "owner", email=f"tabs-owner-{width}@example.com", password=PASSWORD)
    colleague = factories.member(org, "member", email=f"tabs-member-{width}@example.com", password=PASSWORD)
    agent = factories.published_agent(org, owner, name="Shop")
    collection = factories.collection(org, "Payroll", visibility=Collection.Visibility.PRIVATE, created_by=owner)
    base = live_server_url

    # bypass_csp: axe is injected by the test as a script tag, which the console's policy would rightly refuse.
    page = browser.new_page(viewport={"width": width, "height": 900}, bypass_csp=True)
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, owner.email)

    checklist = page.locator("[data-first-run-checklist]")
    assert "1 of 5 done" in checklist.inner_text()  # the agent is made; the demo model is no connected model
    assert page.locator('[data-checklist-step="agent"]').get_attribute("data-done") == "true"
    assert fits(page)
    page.screenshot(path=str(ARTIFACTS / f"first-run-checklist-{width}.png"), full_page=True)
    assert_clean(page, f"home with the checklist at {width}")
    checklist.get_by_role("link", name="Add knowledge").click()
    page.wait_for_url(f"{base}/knowledge/")

    page.goto(f"{base}/agents/{agent.pk}/triggers/")
    tabs = page.locator("[data-agent-tabs]")
    assert tabs.locator("[aria-current=page]").inner_text() == "Triggers"
    assert fits(page)
    page.screenshot(path=str(ARTIFACTS / f"agent-tabs-triggers-{width}.png"), full_page=True)
    assert_clean(page, f"an agent's triggers page at {width}")
    tabs.get_by_role("link", name="Evaluations").click()
    page.wait_for_url(f"{base}/agents/{agent.pk}/evals/")
    assert page.locator("[data-agent-tabs] [aria-current=page]").inner_text() == "Evaluations"
    page.locator("[data-agent-tabs]").get_by_role("link", name="Toolbox").click()
    page.wait_for_url(f"{base}/agents/{agent.pk}/#toolbox")
    assert page.locator("[data-agent-tabs] [aria-current=page]").inner_text() == "Builder"
    page.locator("[data-agent-tabs]").get_by_role("link", name="Delegates").click()
    page.wait_for_url(f"{base}/agents/{agent.pk}/delegates/")

    page.goto(f"{base}/knowledge/{collection.pk}/")
    card = page.locator("[data-collection-sharing]")
    assert "Nobody has been given access yet." in card.inner_text()
    card.get_by_label("Member").select_option(label=colleague.email)
    card.get_by_label("They may").select_option(label="Can read and use it in agents")
    card.get_by_role("button", name="Give access").click()
    page.wait_for_url(f"{base}/knowledge/{collection.pk}/#sharing")
    granted = page.locator(f'[data-grant="{colleague.email}"]')
    assert "Can read and use it in agents" in granted.inner_text()
    assert fits(page)
    page.locator("[data-collection-sharing]").screenshot(path=str(ARTIFACTS / f"knowledge-sharing-{width}.png"))
    assert_clean(page, f"a collection with its Sharing card at {width}")
    granted.get_by_role("button", name=f"Remove the access of {colleague.email}").click()
    page.wait_for_url(f"{base}/knowledge/{collection.pk}/#sharing")
    assert page.locator("[data-grant]").count() == 0

    page.goto(f"{base}/notifications/")
    page.get_by_label("A run waits for my decision on a tool call").check()
    page.locator("[data-email-save]").click()
    page.wait_for_url(f"{base}/notifications/")
    assert page.get_by_label("A run waits for my decision on a tool call").is_checked()
    assert fits(page)
    assert_clean(page, f"notifications with the e-mail choice at {width}")
    assert errors == []
