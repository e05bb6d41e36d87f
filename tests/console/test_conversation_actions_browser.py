"""Renaming, pinning and searching conversations in the chat list, in Debian's chromium against daphne, at 1440
and 390 px: each item's "…" menu renames (in a dialog) and pins, the pinned one comes first, the search finds a message's text, a
colleague's conversation never shows, nothing overflows the phone's width, and no console error."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import Conversation, Message
from tests import factories
from tests.console.browser_steps import sign_in
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-correct-horse-9"
TIMEOUT = 30_000


def person(org, email, role):
    user = factories.user(email=email, password=PASSWORD)
    Membership.objects.create(organization=org, user=user, role=role)
    return user


def chat(agent, owner, title, said):
    conversation = Conversation.objects.create(organization=agent.organization, agent=agent, owner=owner, title=title)
    Message.objects.create(conversation=conversation, role="user", author=owner, content=said)
    return conversation


def listed(page) -> list[str]:
    return page.locator(".conversation-list .conv-title").all_text_contents()


def show_list(page, width: int) -> None:
    """On a phone the list is a drawer (conversations-drawer.js): opened from the chat's head; on a wide screen
    it is always there and the button is not."""
    toggle = page.get_by_role("button", name="Conversations")
    if width > 820:
        assert not toggle.is_visible()
        return
    if not page.locator(".conversations[data-open]").count():
        toggle.click()
    page.locator(".conversations[data-open]").wait_for()


def item_menu(page, conversation):
    """Opens a conversation's "…" menu in the list (console/ui.js) and gives its menu."""
    page.locator(f'[data-conversation="{conversation.pk}"] [data-conv-menu]').click()
    menu = page.locator(f"#conv-menu-{conversation.pk}")
    menu.wait_for()
    return menu


def item_action(page, conversation, name: str) -> None:
    """Chooses an action from a conversation's "…" menu in the list."""
    item_menu(page, conversation).get_by_role("menuitem", name=name, exact=True).click()


@pytest.mark.parametrize("width", [1440, 390])
def test_a_person_renames_pins_and_searches_their_conversations(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    owner = person(org, "owner@example.com", "owner")
    colleague = person(org, "colleague@example.com", "member")
    agent = factories.published_agent(org, owner, name="Helper")
    alpha = chat(agent, owner, "Alpha notes", "please draft the launch checklist")
    chat(agent, owner, "Beta plans", "what is on the roadmap")
    chat(agent, owner, "Gamma ideas", "brainstorm names")
    chat(agent, colleague, "Colleague's checklist", "my own launch checklist")

    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com")

    page.goto(f"{live_server_url}/chat/")
    assert listed(page) == ["Gamma ideas", "Beta plans", "Alpha notes"]

    # Rename: the item's menu opens a dialog.
    show_list(page, width)
    page.get_by_role("button", name="Actions for Alpha notes").wait_for()
    item_action(page, alpha, "Rename…")
    dialog = page.get_by_role("dialog", name="Rename the conversation")
    dialog.get_by_label("Title").fill("  Launch plan  ")
    dialog.get_by_role("button", name="Save title").click()
    page.get_by_text("The conversation was renamed.").wait_for()
    alpha.refresh_from_db()
    assert alpha.title == "Launch plan"

    # Pin: it moves to the top and says it is pinned; its button now unpins.
    page.goto(f"{live_server_url}/chat/")
    show_list(page, width)
    with page.expect_navigation():
        item_action(page, alpha, "Pin to the top")
    show_list(page, width)
    item_menu(page, alpha).get_by_role("menuitem", name="Unpin").wait_for()
    page.keyboard.press("Escape")
    assert listed(page)[0] == "Pinned · Launch plan"
    assert listed(page)[1:] == ["Gamma ideas", "Beta plans"]
    alpha.refresh_from_db()
    assert alpha.pinned_at is not None
    page.screenshot(path=str(ARTIFACTS / f"chat-list-pinned-{width}.png"), full_page=True)

    # Search by a message's text: only the person's own conversation comes back, the colleague's stays out (a
    # search keeps the drawer open on a phone).
    page.get_by_label("Search conversations").fill("checklist")
    page.get_by_label("Search conversations").press("Enter")
    page.wait_for_url("**/chat/?q=checklist")
    assert listed(page) == ["Pinned · Launch plan"]
    page.get_by_label("Search conversations").fill("gamma")
    page.get_by_role("button", name="Search", exact=True).click()
    page.wait_for_url("**/chat/?q=gamma")
    assert listed(page) == ["Gamma ideas"]
    page.get_by_label("Search conversations").fill("nothing like this")
    page.get_by_label("Search conversations").press("Enter")
    page.get_by_text("No conversation matches").wait_for()
    assert listed(page) == []
    page.screenshot(path=str(ARTIFACTS / f"chat-list-search-{width}.png"), full_page=True)

    # Unpin from a search keeps the search.
    page.goto(f"{live_server_url}/chat/?q=launch")
    with page.expect_navigation():
        item_action(page, alpha, "Unpin")
    page.wait_for_url("**/chat/?q=launch")
    show_list(page, width)
    item_menu(page, alpha).get_by_role("menuitem", name="Pin to the top").wait_for()
    alpha.refresh_from_db()
    assert alpha.pinned_at is None

    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    assert errors == []
    context.close()


@pytest.mark.parametrize("width", [1440, 390])
def test_on_a_phone_the_list_is_a_drawer_and_on_a_wide_screen_it_is_always_there(live_server_url, browser, width):
    """Issue 45 §8: on a phone the list is a drawer, not stacked above the chat — closed at first (the chat is what
    a person opened), opened by the "Conversations" button, closed by its Close button or Escape, focus going
    back to the button; grouped by date inside (Today); no serious axe violation with it open."""
    from tests.axe import assert_clean

    org = factories.organization(name="Acme")
    owner = person(org, "owner@example.com", "owner")
    agent = factories.published_agent(org, owner, name="Helper")
    opened = chat(agent, owner, "Alpha notes", "please draft the launch checklist")
    context = browser.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)  # axe is injected
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com", then=f"/chat/{opened.pk}/")
    page.locator("[data-composer]").wait_for()
    toggle = page.get_by_role("button", name="Conversations")
    group = page.get_by_role("heading", name="Today")
    if width > 820:
        assert page.locator(".conversations").is_visible() and group.is_visible() and not toggle.is_visible()
        assert errors == []
        context.close()
        return
    assert not page.locator(".conversations").is_visible() and toggle.get_attribute("aria-expanded") == "false"
    composer = page.locator("[data-composer]").bounding_box()
    assert composer and composer["y"] < 800  # the chat, not a list above it, fills the phone's screen
    toggle.click()
    drawer = page.locator(".conversations[data-open]")
    drawer.wait_for()
    assert toggle.get_attribute("aria-expanded") == "true" and group.is_visible()
    box = drawer.bounding_box()
    assert box and box["x"] == 0 and box["width"] <= width
    page.screenshot(path=str(ARTIFACTS / "chat-list-drawer-390.png"))
    assert_clean(page, "the conversation drawer at 390 px")
    page.keyboard.press("Escape")
    assert not page.locator(".conversations").is_visible()
    assert page.evaluate("() => document.activeElement.hasAttribute('data-conversations-toggle')")
    toggle.click()
    page.get_by_role("button", name="Close").click()
    assert not page.locator(".conversations").is_visible()
    assert errors == []
    context.close()
