"""Each conversation's "…" menu in the chat list (issue 45: destructive actions in a menu, as LibreChat's and Open
WebUI's lists have them), in Debian's chromium against daphne at 1440 px light and at 390 px dark, where the list
is a drawer: by keyboard the person opens an item's menu (its button named "Actions for <title>"), the arrows move
and wrap, Home and End jump, Escape closes it and gives the focus back to its button (the drawer stays open); the
person archives the conversation from it, it leaves the list and shows under Archived. Delete asks in the page's
confirmation dialog first: Cancel keeps the conversation, confirming deletes it. The menu fits the phone's screen;
axe finds nothing serious with it open; no console error. Screenshots:
test-artifacts/console/list5-item-menu-{light-1440,dark-390}.png."""

from __future__ import annotations

import pytest

from agents.models import Conversation
from tests import factories
from tests.axe import assert_clean
from tests.console.browser_steps import sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_conversation_actions_browser import (
    TIMEOUT,
    chat,
    item_menu,
    listed,
    person,
    show_list,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FOCUSED_JS = "() => (document.activeElement.textContent || '').trim() || document.activeElement.getAttribute('aria-label')"


def focused(page) -> str:
    return page.evaluate(FOCUSED_JS)


@pytest.mark.parametrize(("width", "theme"), [(1440, "light"), (390, "dark")])
def test_an_items_menu_by_keyboard_archives_it_and_delete_asks_first(live_server_url, browser, width, theme):
    org = factories.organization(name="Acme")
    owner = person(org, "owner@example.com", "owner")
    agent = factories.published_agent(org, owner, name="Helper")
    alpha = chat(agent, owner, "Alpha notes", "please draft the launch checklist")
    beta = chat(agent, owner, "Beta plans", "what is on the roadmap")
    chat(agent, owner, "Gamma ideas", "brainstorm names")

    context = browser.new_context(viewport={"width": width, "height": 820}, color_scheme=theme,
                                  bypass_csp=True)  # bypass_csp: axe is injected
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com", then="/chat/")
    assert listed(page) == ["Gamma ideas", "Beta plans", "Alpha notes"]
    show_list(page, width)

    # By keyboard: Enter on the item's "…" button opens its menu on the first item.
    button = page.get_by_role("button", name="Actions for Alpha notes")
    assert button.get_attribute("aria-expanded") == "false"
    button.focus()
    page.keyboard.press("Enter")
    menu = page.locator(f"#conv-menu-{alpha.pk}")
    menu.wait_for()
    assert button.get_attribute("aria-expanded") == "true"
    items = [t.strip() for t in menu.get_by_role("menuitem").all_text_contents()]
    assert items == ["Rename…", "Pin to the top", "Archive", "Tags…", "Delete…"]
    assert focused(page) == "Rename…"
    page.keyboard.press("ArrowUp")
    assert focused(page) == "Delete…"  # the arrows wrap
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Rename…"
    page.keyboard.press("End")
    assert focused(page) == "Delete…"
    page.keyboard.press("Home")
    assert focused(page) == "Rename…"
    box = menu.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    page.screenshot(path=str(ARTIFACTS / f"list5-item-menu-{theme}-{width}.png"))
    assert_clean(page, f"an item's menu open at {width} px, {theme}")

    # Escape closes the menu, gives the focus back to its button, and leaves the drawer open on a phone.
    page.keyboard.press("Escape")
    assert menu.is_hidden() and focused(page) == "Actions for Alpha notes"
    assert button.get_attribute("aria-expanded") == "false"
    if width < 820:
        assert page.locator(".conversations[data-open]").count() == 1

    # ArrowDown on the button opens it again; two more down and Enter archive it: it leaves the list.
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Rename…"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Archive"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.get_by_text("The conversation was archived.").wait_for()
    assert listed(page) == ["Gamma ideas", "Beta plans"]
    alpha.refresh_from_db()
    assert alpha.archived_at is not None

    # Under Archived it shows, its menu now offering Unarchive.
    show_list(page, width)
    page.get_by_role("link", name="Archived").click()
    page.wait_for_url("**/chat/?archived=1")
    assert listed(page) == ["Alpha notes"]
    show_list(page, width)
    item_menu(page, alpha).get_by_role("menuitem", name="Unarchive").wait_for()
    page.keyboard.press("Escape")

    # Delete… asks first in the page's own dialog: Cancel keeps the conversation, focus back on the item's button.
    page.goto(f"{live_server_url}/chat/")
    show_list(page, width)
    item_menu(page, beta).get_by_role("menuitem", name="Delete…").click()
    confirm = page.locator("[data-confirm-dialog]")
    confirm.wait_for()
    assert "Beta plans" in confirm.inner_text()
    confirm.get_by_role("button", name="Cancel").click()
    page.wait_for_function("() => document.activeElement.getAttribute('aria-label') === 'Actions for Beta plans'")
    assert Conversation.objects.filter(pk=beta.pk).exists()
    item_menu(page, beta).get_by_role("menuitem", name="Delete…").click()
    with page.expect_navigation():
        confirm.get_by_role("button", name="Delete it, with its files").click()
    page.get_by_text("The conversation was deleted, with its files.").wait_for()
    assert not Conversation.objects.filter(pk=beta.pk).exists()
    assert listed(page) == ["Gamma ideas"]

    assert errors == []
    context.close()
