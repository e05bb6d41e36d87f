"""Builder → Triggers in a real browser (Debian chromium via Playwright, daphne): the next firing is shown in the
viewer's own timezone — the browser's, set per context — with the trigger's timezone kept as the title."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from tests import factories
from tests.console.conftest import ARTIFACTS, browser, live_server_url  # noqa: F401  (fixtures)
from tests.console.test_browser_chat import TIMEOUT, sign_in
from tests.console.test_channels_console_browser import watch
from tests.triggers.conftest import make_trigger
from triggers.models import Trigger

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_next_firing_is_shown_in_the_browsers_timezone(live_server_url, browser):  # noqa: F811
    org = factories.organization(name="Acme")
    person = factories.member(org, "builder", email="tz@example.com")
    agent = factories.published_agent(org, person, name="Reporter")
    trigger, _ = make_trigger(person, org, agent, cron="30 8 * * 1-5", timezone="Europe/Madrid")
    due = Trigger.objects.get().next_run_at
    madrid = due.astimezone(ZoneInfo("Europe/Madrid")).strftime("%Y-%m-%d %H:%M")

    shown = {}
    for zone in ("America/New_York", "Asia/Tokyo"):
        context = browser.new_context(timezone_id=zone, locale="en-US", viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.set_default_timeout(TIMEOUT)
            errors = watch(page)
            sign_in(page, live_server_url, "tz@example.com", then=f"/agents/{agent.pk}/triggers/")
            when = page.locator(f'[data-trigger-row="{trigger.pk}"] time[data-local-time]')
            when.and_(page.locator("[data-local-zone]")).wait_for()
            local = due.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M")
            assert " ".join(when.inner_text().split()) == f"{local} {zone}"
            assert when.get_attribute("data-local-zone") == zone
            assert when.get_attribute("title") == f"{madrid} in the trigger's timezone (Europe/Madrid)"
            shown[zone] = local
            page.screenshot(path=str(ARTIFACTS / f"triggers-{zone.replace('/', '-')}.png"), full_page=True)
            assert errors == []
        finally:
            context.close()
    # Neither browser zone is the trigger's: each shows its own reading of the same instant.
    assert len({madrid, *shown.values()}) == 3
