"""An accessibility pass (vendored axe-core, tests/axe.py) over every page of the console (the list is
tests/console/console_pages.py, held to the console's routes by tests/console/test_console_pages.py), in Debian
chromium via Playwright against daphne, in the light and the dark theme: one seeded organization, one signed-in owner,
one browser page walking its share of the list. No serious or critical violation (WCAG 2 A and AA rules) on any of
them: every rule in light, then the same document switched to dark for the rules colours decide (and every rule
again wherever the switch changed more than colours — tests/axe.py says why that is the same proof)."""

from __future__ import annotations

import json

import pytest

from tests import factories
from tests.axe import serious_violations_in_both_themes, with_axe
from tests.console.browser_steps import sign_in
from tests.console.console_pages import SIGNED_OUT, pages, seed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000
BACKGROUND = {"light": "rgb(246, 247, 249)", "dark": "rgb(17, 21, 28)"}  # console.css's --bg
# The ~70 pages in a few shares (every CHUNKS-th page, so the two heavy Builder pages fall in different shares), each
# a test of its own so that pytest-xdist spreads them over its workers: one test walking them all was the suite's
# tail. A share's own cost is seeding the organization and signing in (~3 s under load); the daphne and Chromium
# are the session's.
CHUNKS = 4


@pytest.mark.timeout(900)  # some twenty pages, each read by axe twice: minutes on a loaded machine
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_no_console_page_has_a_serious_accessibility_violation(live_server_url, browser, settings, tmp_path, chunk):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    org = factories.organization(name="Acme")
    owner = factories.member(org, "owner", email="owner@example.com")
    world = seed(org, owner)
    every = pages(world)
    assert len(every) > 50
    share = every[chunk::CHUNKS]
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light")
    with_axe(context)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    found: dict[str, dict] = {}
    checked: list[str] = []
    signed_in = False
    for target in share:
        if target.name not in SIGNED_OUT and not signed_in:
            sign_in(page, live_server_url, "owner@example.com")
            signed_in = True
        response = page.goto(live_server_url + target.path)
        assert response is not None and response.status < 500, f"{target.name} answered {response and response.status}"
        page.wait_for_load_state("load")
        result = serious_violations_in_both_themes(page)
        if target.name == "console:home":  # the themes this pass is about are the ones the page shows
            assert result["background"] == BACKGROUND, result["background"]
        if result["light"] or result["dark"]:
            found[f"{target.name} {target.path}"] = result
        checked.append(target.name)
    context.close()
    assert checked == [target.name for target in share]
    assert found == {}, f"{len(found)} of {len(checked)} pages:\n" + json.dumps(found, indent=1)
