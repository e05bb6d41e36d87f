"""The Toolbox in a real browser (Debian chromium via Playwright, daphne): a compact searchable list with one
capability's settings beside it, labels written for people, one Save for the draft whose problems show at their
setting (never under a bare "saved"), and a warning before leaving with unsaved changes. At 1440 and 390 px, with
no console error."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import Agent
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000


@pytest.mark.parametrize("width", [1440, 390])
def test_the_toolbox_searches_saves_once_and_warns_before_leaving_unsaved(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Helper", capabilities=[{"id": "clock"}])
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, live_server_url, "owner@example.com")
    builder_url = f"{live_server_url}/agents/{agent.pk}/"
    page.goto(builder_url)

    # One capability's settings at a time, beside the list; labels a person can read.
    assert page.locator("[data-capability]:visible").count() == 1
    page.get_by_label("Search capabilities").fill("calcul")
    assert page.locator("[data-toolbox-row=code_execution]").is_visible()
    assert not page.locator("[data-toolbox-row=charts]").is_visible()
    page.locator("[data-toolbox-open=code_execution]").click()
    card = page.locator("#cap-code_execution")
    assert card.is_visible() and not page.locator("#cap-clock").is_visible()
    text = page.locator("#toolbox").inner_text()
    for machine in ("Timeout Secs", "Include Execute", "Max Memory Mb"):
        assert machine not in text
    page.screenshot(path=str(ARTIFACTS / f"toolbox-{width}.png"), full_page=True)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width

    # Switched on from the list, with a limit out of range: unsaved, and leaving asks first.
    page.get_by_label("Calculations: on").check()
    assert card.get_by_label("Calculations").is_checked()
    card.get_by_text("Advanced settings").click()
    card.get_by_label("Time limit (seconds)").fill("999")
    assert page.locator("[data-toolbox-status]").text_content() == "Unsaved changes"
    dialogs: list[str] = []

    def refuse(dialog):
        dialogs.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", refuse)
    with page.expect_event("dialog") as asked:
        page.locator("[data-triggers-tab]").click()
    assert asked.value.type == "beforeunload"
    assert dialogs == ["beforeunload"] and page.url.startswith(builder_url)  # dismissed: still here

    # One Save: saved, but the out-of-range limit is shown at its field, not under a bare "saved".
    page.get_by_role("button", name="Save the Toolbox").click()
    status = page.locator("[data-toolbox-status]")
    page.wait_for_function("() => document.querySelector('[data-toolbox-status]').textContent.startsWith('Saved')")
    assert "needs fixing" in status.text_content()
    field_error = card.locator("[data-config-field=timeout_secs] [data-field-error]")
    assert field_error.is_visible() and field_error.text_content()
    agent.refresh_from_db()
    binding = next(b for b in agent.draft_spec["capabilities"] if b["id"] == "code_execution")
    assert binding["enabled"] and binding["config"] == {"timeout_secs": 999}

    card.get_by_label("Time limit (seconds)").fill("30")
    page.get_by_role("button", name="Save the Toolbox").click()
    page.wait_for_function("() => document.querySelector('[data-toolbox-status]').textContent === "
                           "'Saved in the draft.'")
    assert card.locator("[data-config-field=timeout_secs] [data-field-error]").count() == 0
    agent = Agent.objects.get(pk=agent.pk)
    assert next(b for b in agent.draft_spec["capabilities"] if b["id"] == "code_execution")["config"] == {
        "timeout_secs": 30}

    # Saved: leaving asks nothing.
    page.locator("[data-triggers-tab]").click()
    page.wait_for_url(f"{live_server_url}/agents/{agent.pk}/triggers/**")
    assert dialogs == ["beforeunload"]
    assert problems == []


@pytest.mark.parametrize("width", [1440, 390])
def test_a_viewer_sees_the_list_read_only_and_no_save(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    viewer = factories.user(email="viewer@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=viewer, role="viewer")
    agent = factories.published_agent(org, owner, name="Helper", capabilities=[{"id": "clock"}])
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "viewer@example.com", then=f"/agents/{agent.pk}/")
    assert page.get_by_label("Date and time: on").is_disabled()
    assert page.get_by_role("button", name="Save the Toolbox").count() == 0
    assert page.locator("[data-test-chat]").count() == 0
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
