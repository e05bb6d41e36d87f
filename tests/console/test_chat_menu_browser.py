"""The chat head's one "…" menu, the page's dialogs, toasts and skeletons (issue 45, "The look": destructive actions
in a menu, toasts, dialogs, skeletons while loading), in Debian's chromium against daphne at 1440 and 390 px in both
themes, as a person uses them: by keyboard (Enter opens on the first item, the arrows move and wrap, Escape closes
and gives the focus back) and by pointer or finger; rename and tags in a dialog, pin, delete behind the page's own
confirmation (Cancel keeps the conversation), each result a toast; a conversation followed from the list shows a
skeleton until it comes. The menu fits a phone; axe finds nothing serious with the menu or a dialog open; no console
error. Screenshots: test-artifacts/console/look5-chat-{menu,dialog,confirm,toast,skeleton}-<theme>-<width>.png."""

from __future__ import annotations

import pytest

from agents.models import Conversation
from tests import factories
from tests.axe import assert_clean
from tests.console.browser_steps import sign_in
from tests.console.conftest import ARTIFACTS, make_turn
from tests.console.test_browser_chat_actions import member, press

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 60_000

FOCUSED_JS = "() => (document.activeElement.textContent || '').trim() || document.activeElement.getAttribute('aria-label')"


def open_chat(browser, live_server_url, email, width, theme, path):
    context = browser.new_context(viewport={"width": width, "height": 820}, has_touch=width < 500,
                                  color_scheme=theme, bypass_csp=True)  # bypass_csp: axe is injected
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server_url, email)
    page.goto(f"{live_server_url}{path}")
    page.wait_for_selector(".turn-assistant")
    return context, page, errors


def focused(page) -> str:
    return page.evaluate(FOCUSED_JS)


def focus_comes_back(page, name: str) -> None:
    """The dialog's close event (which gives the focus back) is dispatched a task after the dialog hides: wait."""
    page.wait_for_function(f"(name) => ({FOCUSED_JS[6:]}) === name", arg=name)


def fits(page, locator, width) -> None:
    box = locator.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1


@pytest.mark.parametrize(("width", "theme"), [(1440, "light"), (390, "dark")])
def test_the_chat_heads_menu_by_keyboard_then_rename_tags_and_pin(live_server_url, browser, width, theme):
    org = factories.organization(name="Acme")
    owner = member(org, "owner@example.com", "owner")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    conversation, _ = make_turn(org, owner, agent, prompt="Plan the launch")
    context, page, errors = open_chat(browser, live_server_url, "owner@example.com", width, theme,
                                      f"/chat/{conversation.pk}/")
    button = page.get_by_role("button", name="Conversation actions")
    menu = page.get_by_role("menu")
    # The old separate controls are gone from the head: one button holds them.
    assert page.locator(".chat-head").get_by_text("Delete conversation").count() == 0
    assert not menu.is_visible()
    assert "{#" not in page.locator("main").inner_text()  # a template comment never shows

    # Keyboard: Enter opens on the first item; the arrows move and wrap; Home/End; a letter jumps; Escape closes
    # and the focus is back on the button.
    button.focus()
    page.keyboard.press("Enter")
    menu.wait_for()
    assert button.get_attribute("aria-expanded") == "true"
    items = [t.strip() for t in menu.get_by_role("menuitem").all_text_contents()]
    assert items == ["Rename…", "Pin to the top", "Archive", "Tags…", "Share…", "Export as Markdown",
                     "Export as JSON", "Delete…"]
    assert focused(page) == "Rename…"
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Pin to the top"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert focused(page) == "Delete…"  # wrapped to the last
    page.keyboard.press("Home")
    assert focused(page) == "Rename…"
    page.keyboard.press("End")
    assert focused(page) == "Delete…"
    page.keyboard.press("e")
    assert focused(page) == "Export as Markdown"
    fits(page, menu, width)
    page.screenshot(path=str(ARTIFACTS / f"look5-chat-menu-{theme}-{width}.png"))
    assert_clean(page, f"chat menu open {theme} {width}")
    page.keyboard.press("Escape")
    assert not menu.is_visible()
    assert button.get_attribute("aria-expanded") == "false"
    assert focused(page) == "Conversation actions"
    # ArrowUp on the button opens it on the last item; Tab away closes it.
    page.keyboard.press("ArrowUp")
    assert focused(page) == "Delete…"
    page.keyboard.press("Escape")

    # Rename in a dialog, by keyboard: Escape closes the dialog and gives the focus back to the menu's button.
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Rename the conversation")
    dialog.wait_for()
    assert focused(page) == "" or page.evaluate("() => document.activeElement.id") == "chat-rename-input"
    assert_clean(page, f"rename dialog {theme} {width}")
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    focus_comes_back(page, "Conversation actions")

    # …and for real, by pointer or finger: the new title, and its toast.
    press(button, width)
    press(menu.get_by_role("menuitem", name="Rename…"), width)
    dialog.get_by_label("Title").fill("Launch plan")
    fits(page, dialog, width)
    page.screenshot(path=str(ARTIFACTS / f"look5-chat-dialog-{theme}-{width}.png"))
    with page.expect_navigation():
        press(dialog.get_by_role("button", name="Save title"), width)
    toast = page.locator("[data-toasts] .toast").filter(has_text="The conversation was renamed.")
    toast.wait_for()
    page.screenshot(path=str(ARTIFACTS / f"look5-chat-toast-{theme}-{width}.png"))
    assert page.locator("h1.chat-title").text_content() == "Launch plan"
    conversation.refresh_from_db()
    assert conversation.title == "Launch plan"
    # A success leaves once the person acts on the page; it never takes a click meanwhile.
    assert page.evaluate("() => getComputedStyle(document.querySelector('[data-toasts] .toast')).pointerEvents") == "none"
    page.mouse.move(5, 400)
    toast.wait_for(state="detached")

    # Tags in their dialog; pin from the menu.
    press(button, width)
    press(menu.get_by_role("menuitem", name="Tags…"), width)
    page.get_by_role("dialog", name="Tags").get_by_label("Tags, separated by commas").fill("Work, ideas")
    with page.expect_navigation():
        press(page.get_by_role("dialog", name="Tags").get_by_role("button", name="Save tags"), width)
    page.get_by_text("The tags were saved.").wait_for()
    conversation.refresh_from_db()
    assert sorted(conversation.tags) == ["ideas", "work"]
    press(button, width)
    with page.expect_navigation():
        press(menu.get_by_role("menuitem", name="Pin to the top"), width)
    page.get_by_text("Pinned to the top of the list.").wait_for()
    conversation.refresh_from_db()
    assert conversation.pinned_at is not None
    press(button, width)
    assert menu.get_by_role("menuitem", name="Unpin").is_visible()
    # A click outside closes it.
    page.locator(".transcript").click(position={"x": 5, "y": 5})
    assert not menu.is_visible()
    assert errors == []
    context.close()


@pytest.mark.parametrize(("width", "theme"), [(1440, "dark"), (390, "light")])
def test_delete_asks_in_the_pages_dialog_and_cancel_keeps_the_conversation(live_server_url, browser, width, theme):
    org = factories.organization(name="Acme")
    owner = member(org, "owner@example.com", "owner")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    doomed, _ = make_turn(org, owner, agent, prompt="Forget this")
    context, page, errors = open_chat(browser, live_server_url, "owner@example.com", width, theme,
                                      f"/chat/{doomed.pk}/")
    button = page.get_by_role("button", name="Conversation actions")
    press(button, width)
    press(page.get_by_role("menuitem", name="Delete…"), width)
    dialog = page.get_by_role("dialog", name="Delete “Forget this”?")
    dialog.wait_for()
    assert "for good" in dialog.text_content()
    # The safe answer has the focus; the deleting one is in the danger colour.
    assert focused(page) == "Cancel"
    fits(page, dialog, width)
    page.screenshot(path=str(ARTIFACTS / f"look5-chat-confirm-{theme}-{width}.png"))
    assert_clean(page, f"confirm dialog {theme} {width}")
    press(dialog.get_by_role("button", name="Cancel"), width)
    dialog.wait_for(state="hidden")
    focus_comes_back(page, "Conversation actions")
    assert Conversation.objects.filter(pk=doomed.pk).exists()

    # Escape is a Cancel too; then the real thing.
    press(button, width)
    press(page.get_by_role("menuitem", name="Delete…"), width)
    dialog.wait_for()
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    assert Conversation.objects.filter(pk=doomed.pk).exists()
    press(button, width)
    press(page.get_by_role("menuitem", name="Delete…"), width)
    with page.expect_navigation():
        press(dialog.get_by_role("button", name="Delete it, with its files"), width)
    page.wait_for_url(f"{live_server_url}/chat/")
    page.locator("[data-toasts]").get_by_text("The conversation was deleted, with its files.").wait_for()
    assert not Conversation.objects.filter(pk=doomed.pk).exists()
    assert errors == []
    context.close()


@pytest.mark.parametrize(("width", "theme"), [(1440, "light"), (390, "dark")])
def test_a_skeleton_while_a_conversation_comes_and_a_viewer_gets_the_exports_only(
        live_server_url, browser, width, theme):
    org = factories.organization(name="Acme")
    owner = member(org, "owner@example.com", "owner")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    first, _ = make_turn(org, owner, agent, prompt="First question")
    second, _ = make_turn(org, owner, agent, prompt="Second question")
    context, page, errors = open_chat(browser, live_server_url, "owner@example.com", width, theme,
                                      f"/chat/{first.pk}/")
    # The skeleton drawn with the page is gone once the conversation is drawn.
    assert page.locator("[data-transcript] [data-skeleton]").count() == 0
    assert page.locator("[data-transcript]").get_attribute("aria-busy") == "false"

    # Following another conversation: the transcript is a skeleton at once, before the next page comes. The page
    # change is held back by a listener of the test's on window (after the page's own on document): a held
    # request (page.route) stalls Playwright's own calls on the leaving page.
    page.evaluate("""() => { window.__hold = (e) => { if (e.target.closest('.conversation-list a')) e.preventDefault(); };
                             window.addEventListener('click', window.__hold); }""")
    if width < 500:
        page.get_by_role("button", name="Conversations").tap()
    link = page.locator(".conversation-list a").filter(has_text="Second question")
    link.click()
    page.wait_for_function("() => document.querySelector('[data-transcript] .skeleton')")
    assert page.locator("[data-transcript]").get_attribute("aria-busy") == "true"
    assert page.locator("[data-transcript]").get_by_text("Loading the conversation…").count() == 1
    if width < 500:
        page.get_by_role("button", name="Close").tap()
    page.screenshot(path=str(ARTIFACTS / f"look5-chat-skeleton-{theme}-{width}.png"))
    page.evaluate("() => window.removeEventListener('click', window.__hold)")
    if width < 500:
        page.get_by_role("button", name="Conversations").tap()
    with page.expect_navigation():
        link.click()
    page.wait_for_selector(".turn-assistant")
    assert page.locator("[data-transcript] .skeleton").count() == 0
    assert errors == []
    context.close()

    # A viewer (who may read but not run agents) on their own old conversation: the menu offers its exports,
    # nothing that changes it.
    viewer = member(org, "viewer@example.com", "viewer")
    kept, _ = make_turn(org, viewer, agent, prompt="From when I could run")
    context, page, errors = open_chat(browser, live_server_url, "viewer@example.com", width, theme,
                                      f"/chat/{kept.pk}/")
    press(page.get_by_role("button", name="Conversation actions"), width)
    items = [t.strip() for t in page.get_by_role("menu").get_by_role("menuitem").all_text_contents()]
    assert items == ["Export as Markdown", "Export as JSON"]
    with page.expect_download() as download:
        press(page.get_by_role("menuitem", name="Export as Markdown"), width)
    assert download.value.suggested_filename.endswith(".md")
    assert errors == []  # a viewer's page asks no workspace it may not read (no files panel, no 403)
    context.close()
