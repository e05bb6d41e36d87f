"""Archive and tags in the chat list in Debian's chromium against daphne, at 1440 and 390 px (issue 45 §8): from a
conversation's own "…" menu in the list the person archives it (it leaves the list; the Archived view shows it;
Unarchive brings it back) and tags it (the tag shows on it; the tag's chip filters the list, and again clears the
filter). Nothing overflows the phone's width (the list is a drawer there); no console error."""

from __future__ import annotations

import pytest

from agents.models import Conversation
from tests import factories
from tests.console.browser_steps import sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_conversation_actions_browser import (
    TIMEOUT,
    chat,
    item_action,
    listed,
    person,
    show_list,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1440, 390])
def test_a_person_archives_unarchives_tags_and_filters_their_conversations(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    owner = person(org, "owner@example.com", "owner")
    agent = factories.published_agent(org, owner, name="Helper")
    alpha = chat(agent, owner, "Alpha notes", "please draft the launch checklist")
    chat(agent, owner, "Beta plans", "what is on the roadmap")
    gamma = chat(agent, owner, "Gamma ideas", "brainstorm names")

    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com", then="/chat/")
    assert listed(page) == ["Gamma ideas", "Beta plans", "Alpha notes"]

    # Archive: it leaves the list.
    show_list(page, width)
    with page.expect_navigation():
        item_action(page, alpha, "Archive")
    page.get_by_text("The conversation was archived.").wait_for()
    assert listed(page) == ["Gamma ideas", "Beta plans"]
    alpha.refresh_from_db()
    assert alpha.archived_at is not None

    # The Archived view shows it, and only it; Unarchive brings it back.
    show_list(page, width)
    page.get_by_role("link", name="Archived").click()
    page.wait_for_url("**/chat/?archived=1")
    assert listed(page) == ["Alpha notes"]
    page.screenshot(path=str(ARTIFACTS / f"chat-list-archived-{width}.png"), full_page=True)
    show_list(page, width)
    with page.expect_navigation():
        item_action(page, alpha, "Unarchive")
    page.get_by_text("The conversation is back in the list.").wait_for()
    show_list(page, width)
    page.get_by_text("No archived conversations.").wait_for()
    page.goto(f"{live_server_url}/chat/")
    assert sorted(listed(page)) == ["Alpha notes", "Beta plans", "Gamma ideas"]

    # Tags from the conversation's actions; the tag's chip filters the list, pressed again it shows all.
    show_list(page, width)
    item_action(page, gamma, "Tags…")
    dialog = page.get_by_role("dialog", name="Tags")
    dialog.get_by_label("Tags, separated by commas").fill("Work, ideas")
    with page.expect_navigation():
        dialog.get_by_role("button", name="Save tags").click()
    gamma.refresh_from_db()
    assert gamma.tags == ["work", "ideas"]
    show_list(page, width)
    assert page.locator(f'[data-conversation="{gamma.pk}"] .conv-tag').all_text_contents() == ["work", "ideas"]
    page.locator('[data-tag-filter="work"]').click()
    page.wait_for_url("**/chat/?tag=work")
    assert listed(page) == ["Gamma ideas"]
    show_list(page, width)
    assert page.locator('[data-tag-filter="work"]').get_attribute("aria-current") == "true"
    page.screenshot(path=str(ARTIFACTS / f"chat-list-tagged-{width}.png"), full_page=True)
    page.locator('[data-tag-filter="work"]').click()
    page.wait_for_url(f"{live_server_url}/chat/?")
    assert len(listed(page)) == 3
    assert Conversation.objects.filter(owner=owner, archived_at__isnull=False).count() == 0

    assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
    assert errors == []
    context.close()
