"""The files panel in a real browser: a conversation whose agent keeps files shows them beside the transcript
(whose they are, how full), re-read when a turn ends; the write in the transcript is a card with Open and
Download; Open shows a text file; the panel is absent — not empty — for an agent without a workspace. Screenshots go to test-artifacts/console/."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import Conversation
from tests import factories
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, send, shot, sign_in, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_files_panel_shows_what_the_agent_saved_and_opens_it(live_server_url, browser):
    org = factories.organization(name="Acme")
    owner = factories.user(email="files@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    keeper = factories.published_agent(org, owner, name="Keeper", capabilities=[{"id": "sandbox"}])
    plain = factories.published_agent(org, owner, name="Plain")

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "files@example.com", then=f"/chat/?agent={keeper.pk}")
    assert page.locator("[data-files]").is_hidden()  # no conversation yet: nothing to show

    send(page, "Please save: ship on Friday")
    wait_idle(page, 1)
    page.wait_for_selector("[data-files] [data-file='/workspace/notes.md']")
    panel = page.locator("[data-files]")
    assert "Files of this conversation" in panel.inner_text()
    assert "of 50.0 MB used (0%)" in panel.locator("[data-files-fill]").inner_text()
    assert page.locator("[data-usage] [data-workspace-fill]").inner_text() == "Workspace 0% full"
    # The write in the transcript is a card naming the file, resolved against the listing
    # (the model wrote "notes.md"; the file is /workspace/notes.md).
    card = page.locator("[data-transcript] [data-file-card='/workspace/notes.md']")
    card.wait_for()
    assert "notes.md" in card.inner_text() and card.get_by_role("link", name="Download").count() == 1
    card.get_by_role("button", name="Open").click()
    page.wait_for_selector("[data-file-text]")
    assert "ship on Friday" in page.locator("[data-file-text]").inner_text()
    page.locator("[data-file-viewer]").evaluate("node => node.replaceChildren()")
    panel.get_by_role("button", name="Open").click()
    page.wait_for_selector("[data-file-text]")
    assert "ship on Friday" in page.locator("[data-file-text]").inner_text()
    shot(page, "chat-files-panel")

    conversation = Conversation.objects.get(agent=keeper)
    page.goto(f"{live_server_url}/chat/{conversation.pk}/")
    page.wait_for_selector("[data-files] [data-file='/workspace/notes.md']")

    other = Conversation.objects.create(organization=org, agent=plain, owner=owner, title="Plain chat")
    page.goto(f"{live_server_url}/chat/{other.pk}/")
    page.wait_for_load_state("networkidle")
    assert page.locator("[data-files]").is_hidden() and page.locator("[data-workspace-fill]").count() == 0
    assert "with-files" not in (page.locator(".chat-layout").get_attribute("class") or "")
