"""The Builder's settings as a person uses them, in Debian's chromium against daphne, at 1440 and 390 px: the
Toolbox shows every capability under its category with no scroll box (Advanced folded until opened, search
hiding the categories without a match); the model settings and most steps are typed, refused at the field when
out of range and saved; the publish notice names the field to fix and its link opens it; a refused publish
reloaded lands on the Builder, not a bare 405 — with no console error."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests import factories
from tests.console.browser_steps import PASSWORD, sign_in
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import TIMEOUT
from tests.console.test_channels_console_browser import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1440, 390])
def test_a_builder_sets_every_setting_and_is_taken_to_what_to_fix(live_server_url, browser, width):
    org = factories.organization(name="Acme")
    builder = factories.member(org, "builder", email=f"bs-{width}@example.com", password=PASSWORD)
    agent = factories.published_agent(org, builder, name="Helper", capabilities=[{"id": "clock"}])
    base = live_server_url

    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(TIMEOUT)
    errors = watch(page)
    sign_in(page, base, builder.email, then=f"/agents/{agent.pk}/")

    # ---- the Toolbox: every row reachable without an inner scroll box
    listing = page.locator("[data-toolbox-list]")
    assert listing.evaluate("el => el.scrollHeight <= el.clientHeight + 1")
    assert page.locator("[data-toolbox-category='knowledge'] h3").inner_text() == "Knowledge and memory"
    basic_rows = page.locator("[data-toolbox-category] [data-toolbox-row]")
    assert basic_rows.count() >= 20 and all(basic_rows.nth(i).is_visible() for i in range(basic_rows.count()))
    advanced_row = page.locator("[data-toolbox-group] [data-toolbox-row='compaction']")
    assert not advanced_row.is_visible()
    page.locator("[data-toolbox-group] > summary").click()
    assert advanced_row.is_visible()
    page.locator("[data-toolbox-group] > summary").click()
    page.get_by_label("Search capabilities").fill("compaction")
    advanced_row.wait_for()
    assert not page.locator("[data-toolbox-category='knowledge']").is_visible()
    page.get_by_label("Search capabilities").fill("")
    page.locator("#toolbox").screenshot(path=str(ARTIFACTS / f"builder-toolbox-{width}.png"))

    # ---- model settings and most steps
    page.locator("[data-model-settings] > summary").click()
    page.get_by_label("Temperature (0–2)").fill("5")
    page.get_by_label("Most steps per answer").fill("12")
    page.get_by_role("button", name="Save the draft").click()
    # The field's own range stops the form before it is sent (the server's refusal is tested without a browser).
    assert page.get_by_label("Temperature (0–2)").evaluate("el => el.validity.rangeOverflow")
    assert page.url == f"{base}/agents/{agent.pk}/"
    page.get_by_label("Temperature (0–2)").fill("0.4")
    page.get_by_label("Most steps per answer").fill("12")
    page.get_by_label("Longest answer (tokens)").fill("900")
    page.get_by_role("button", name="Save the draft").click()
    page.get_by_text("Draft saved.").wait_for()
    spec = Agent.objects.get(pk=agent.pk).draft_spec
    assert spec["model_settings"]["temperature"] == 0.4 and spec["model_settings"]["max_tokens"] == 900
    assert spec["max_steps"] == 12
    page.locator("#basics").screenshot(path=str(ARTIFACTS / f"builder-model-settings-{width}.png"))

    # ---- publish names what to fix and takes the person there
    Agent.objects.filter(pk=agent.pk).update(draft_spec={
        **spec, "capabilities": [*spec["capabilities"], {"id": "code_execution", "config": {"timeout_secs": 999}}]})
    page.reload()
    notice = page.locator("[data-publish-problems]")
    assert "1 thing to fix before publishing" in notice.inner_text()
    page.locator("[data-publish-problems]").screenshot(path=str(ARTIFACTS / f"builder-publish-problems-{width}.png"))
    notice.get_by_role("link", name="Calculations: Time limit (seconds)").click()
    card = page.locator("#cap-code_execution")
    card.locator('[data-config-field="timeout_secs"] [data-field-error]').wait_for()
    assert card.is_visible()
    page.locator("[data-publish]").click()
    page.wait_for_url(f"{base}/agents/{agent.pk}/publish")
    page.goto(page.url)
    page.wait_for_url(f"{base}/agents/{agent.pk}/")
    assert page.locator("[data-publish-problems]").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert errors == [] or all("422" in e for e in errors)  # the refused publish and save answer 422, nothing else
