"""Renaming, pinning and searching conversations in the chat list, in Debian's chromium against daphne, at 1440
and 390 px: the forms work as plain forms, the pinned one comes first, the search finds a message's text, a
colleague's conversation never shows, nothing overflows the phone's width, and no console error."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import Conversation, Message
from tests import factories
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
    return page.locator(".conversation-list .conv-title").all_inner_texts()


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
    page.goto(f"{live_server_url}/login/")
    page.get_by_label("Email").fill("owner@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server_url}/")

    page.goto(f"{live_server_url}/chat/")
    assert listed(page) == ["Gamma ideas", "Beta plans", "Alpha notes"]

    # Rename: the summary opens a small form in the list.
    item = page.locator(f'[data-conversation="{alpha.pk}"]')
    item.get_by_text("Rename").click()
    item.get_by_label("New title").fill("  Launch plan  ")
    item.get_by_role("button", name="Save title").click()
    page.get_by_text("The conversation was renamed.").wait_for()
    alpha.refresh_from_db()
    assert alpha.title == "Launch plan"

    # Pin: it moves to the top and says it is pinned; its button now unpins.
    page.goto(f"{live_server_url}/chat/")
    page.get_by_role("button", name="Pin Launch plan").click()
    page.get_by_role("button", name="Unpin Launch plan").wait_for()
    assert listed(page)[0] == "Pinned · Launch plan"
    assert listed(page)[1:] == ["Gamma ideas", "Beta plans"]
    alpha.refresh_from_db()
    assert alpha.pinned_at is not None
    page.screenshot(path=str(ARTIFACTS / f"chat-list-pinned-{width}.png"), full_page=True)

    # Search by a message's text: only the person's own conversation comes back, the colleague's stays out.
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
    page.get_by_role("button", name="Unpin Launch plan").click()
    page.wait_for_url("**/chat/?q=launch")
    page.get_by_role("button", name="Pin Launch plan").wait_for()
    alpha.refresh_from_db()
    assert alpha.pinned_at is None

    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    assert errors == []
    context.close()
