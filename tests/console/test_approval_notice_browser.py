"""Nobody misses an approval (issue 44 §7), in Debian's chromium against daphne and a real worker, at 1440 and
390 px: the owner's chat parks on a gated chart; the admin — another person who may decide — sees the bell's
unread count and a count on Approvals, opens the notification, lands on Approvals, approves; the run's page then
says the time it waited for a person apart from the time it worked. A member sees no count. No console error."""

from __future__ import annotations

import pytest

from agents.models import Run, RunStatus
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT, send
from tests.console.test_channels_console_browser import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1440, 390])
def test_a_decider_is_told_follows_the_bell_to_approvals_and_the_run_says_who_it_waited_for(
    live_server_url, browser, width
):
    org = factories.organization(name="Acme")
    owner = factories.member(org, "owner", email=f"ao-{width}@example.com", password=PASSWORD)
    admin = factories.member(org, "admin", email=f"aa-{width}@example.com", password=PASSWORD)
    member = factories.member(org, "member", email=f"am-{width}@example.com", password=PASSWORD)
    factories.published_agent(org, owner, name="Gated", capabilities=[
        {"id": "charts", "tool_approval": {"create_chart": "required"}}])
    base = live_server_url

    asker = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    asker.set_default_timeout(TIMEOUT)
    asker_errors = watch(asker)
    sign_in(asker, base, owner.email)
    asker.goto(f"{base}/chat/")
    send(asker, "Draw a chart please")
    asker.wait_for_selector("[data-approval]")

    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, admin.email, then="/")
    assert page.locator("[data-notifications-bell] [data-unread-count]").inner_text() == "1"
    phone = page.locator("[data-nav-toggle]").is_visible()
    if phone:  # the navigation opens from its button
        page.locator("[data-nav-toggle]").click()
    assert page.locator("[data-approvals-count]").inner_text() == "1"
    page.screenshot(path=str(ARTIFACTS / f"approval-notice-home-{width}.png"), full_page=True)
    if phone:
        page.keyboard.press("Escape")  # closes the navigation, as a person would

    page.locator("[data-notifications-bell]").click()
    note = page.locator("[data-notification-text]")
    assert "Gated waits for a decision" in note.inner_text() and "create_chart" in note.inner_text()
    page.screenshot(path=str(ARTIFACTS / f"approval-notice-bell-{width}.png"), full_page=True)
    page.locator("[data-notification-open]").click()
    page.wait_for_url(f"{base}/approvals/")
    page.get_by_role("button", name="Approve").click()
    page.wait_for_function("() => !document.querySelector('[data-approvals-count]')")

    run = Run.objects.get(organization=org)
    for _ in range(600):  # the resumed run finishes on the worker; bounded wait on the row, not a sleep
        run.refresh_from_db()
        if run.status == RunStatus.COMPLETED:
            break
        page.wait_for_timeout(100)
    assert run.status == RunStatus.COMPLETED
    page.goto(f"{base}/activity/runs/{run.pk}/")
    assert "for a person" in page.locator("[data-run-waited-for-people]").inner_text()
    assert page.locator("[data-run-duration]").inner_text().startswith("Worked")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=str(ARTIFACTS / f"approval-run-waited-{width}.png"), full_page=True)

    page.context.clear_cookies()
    sign_in(page, base, member.email, then="/")
    assert page.locator("[data-approvals-count]").count() == 0
    assert errors == [] and asker_errors == []
