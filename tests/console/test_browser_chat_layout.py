"""The chat's own layout in Debian's chromium against daphne, at 1440 and 390 px (issue 25: "a real mobile layout,
the composer fixed at the bottom", "dark mode following the system setting", deleting a conversation): with a long
conversation the composer is in view whatever the scroll, its attach button and Send beside the text; the system's
dark setting darkens the chat (page, the person's message, the composer); a conversation is deleted from its own
page with its files (the head's menu, then the confirmation dialog). No sideways scroll, no console error."""

from __future__ import annotations

import pytest

from agents.models import Conversation
from tests import factories
from tests.console.conftest import ARTIFACTS, make_turn
from tests.console.test_browser_chat import TIMEOUT, sign_in
from tests.console.test_browser_chat_actions import member, press
from tests.console.test_browser_turn_renderer import console_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IN_VIEW_JS = """(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
  return r.top >= 0 && r.bottom <= window.innerHeight + 1 && r.left >= 0 && r.right <= window.innerWidth + 1; }"""
BACKGROUND_JS = "(selector) => getComputedStyle(document.querySelector(selector)).backgroundColor"


def luminance(rgb: str) -> float:
    red, green, blue = (int(v) for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def chat_at(browser, live_server_url, email, width, path):
    context = browser.new_context(viewport={"width": width, "height": 800}, has_touch=width < 500)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = console_errors(page)
    sign_in(page, live_server_url, email)
    page.goto(f"{live_server_url}{path}")
    return context, page, errors


@pytest.mark.parametrize("width", [1440, 390])
def test_the_composer_stays_in_view_of_a_long_conversation_and_dark_mode_darkens_the_chat(
        live_server_url, browser, width):
    org = factories.organization(name="Acme")
    person = member(org, "reader@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    conversation, _ = make_turn(org, person, agent, prompt="Question 0")
    for n in range(1, 8):
        make_turn(org, person, agent, conversation=conversation, prompt=f"Question {n} " + "and more words " * 12)
    context, page, errors = chat_at(browser, live_server_url, "reader@example.com", width,
                                    f"/chat/{conversation.pk}/")
    page.wait_for_function("() => document.querySelectorAll('.turn-assistant').length === 8")
    assert page.evaluate("() => document.documentElement.scrollHeight") > 800 or width > 500

    # Wherever the reader is in the conversation, the composer (text, attach, Send) is on screen.
    for where in ("0", "document.documentElement.scrollHeight / 2", "document.documentElement.scrollHeight"):
        page.evaluate(f"() => window.scrollTo(0, {where})")
        for control in ("[data-composer-text]", "[data-attach]", "[data-send]"):
            assert page.evaluate(IN_VIEW_JS, control), (where, control)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1

    # The system's dark setting: the page, the person's message and the composer are dark, the text light.
    assert luminance(page.evaluate(BACKGROUND_JS, "html")) > 0.8
    page.emulate_media(color_scheme="dark")
    for selector in ("html", ".turn-user .bubble", "[data-composer]", "[data-composer-text]"):
        assert luminance(page.evaluate(BACKGROUND_JS, selector)) < 0.35, selector
    assert luminance(page.evaluate("() => getComputedStyle(document.querySelector('.turn-user .bubble')).color")) > 0.7
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / f"chat-long-dark-{width}.png"))
    assert errors == []
    context.close()


@pytest.mark.parametrize("width", [1440, 390])
def test_a_person_deletes_a_conversation_from_its_page(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    person = member(org, "deleter@example.com")
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    doomed, _ = make_turn(org, person, agent, prompt="Forget this")
    kept, _ = make_turn(org, person, agent, prompt="Keep this")
    context, page, errors = chat_at(browser, live_server_url, "deleter@example.com", width, f"/chat/{doomed.pk}/")
    page.wait_for_selector(".turn-assistant")

    # Delete is the last item of the head's "…" menu; it asks first, in the page's own dialog.
    press(page.get_by_role("button", name="Conversation actions"), width)
    press(page.get_by_role("menuitem", name="Delete…"), width)
    confirm = page.get_by_role("dialog").get_by_role("button", name="Delete it, with its files")
    box = confirm.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= width and box["height"] >= 32
    press(confirm, width)
    page.wait_for_url(f"{live_server_url}/chat/")
    assert not Conversation.objects.filter(pk=doomed.pk).exists()
    titles = page.locator(".conversation-list .conv-title").all_text_contents()
    assert titles == ["Keep this"]
    assert Conversation.objects.filter(pk=kept.pk).exists()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    assert errors == []
    context.close()
