"""An accessibility pass (vendored axe-core, tests/axe.py) over every page of the console (the list is
tests/console/console_pages.py, held to the console's routes by tests/console/test_console_pages.py), in Debian
chromium via Playwright against daphne, in the light and the dark theme: one seeded organization, one signed-in owner,
one browser page walking the list. No serious or critical violation (WCAG 2 A and AA rules) on any of them."""

from __future__ import annotations

import json

import pytest

from tests import factories
from tests.axe import serious_violations
from tests.console.browser_steps import sign_in
from tests.console.console_pages import SIGNED_OUT, pages, seed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT = 30_000
BACKGROUND = {"light": "rgb(246, 247, 249)", "dark": "rgb(17, 21, 28)"}  # console.css's --bg


@pytest.mark.timeout(1500)  # some seventy pages, each read by axe: minutes on a loaded machine
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_console_page_has_a_serious_accessibility_violation(live_server_url, browser, settings, tmp_path, scheme):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    org = factories.organization(name="Acme")
    owner = factories.member(org, "owner", email="owner@example.com")
    world = seed(org, owner)
    # bypass_csp: axe is injected by the test as a script tag, which the console's policy would rightly refuse.
    page = browser.new_page(viewport={"width": 1440, "height": 900}, bypass_csp=True, color_scheme=scheme)
    page.set_default_timeout(TIMEOUT)
    found: dict[str, list[dict]] = {}
    checked: list[str] = []
    signed_in = False
    for target in pages(world):
        if target.name not in SIGNED_OUT and not signed_in:
            sign_in(page, live_server_url, "owner@example.com")
            signed_in = True
        response = page.goto(live_server_url + target.path)
        assert response is not None and response.status < 500, f"{target.name} answered {response and response.status}"
        page.wait_for_load_state("load")
        if target.name == "console:home":  # the theme this pass is about is the one the page shows
            assert page.evaluate("() => getComputedStyle(document.documentElement).backgroundColor") == BACKGROUND[scheme]
        violations = serious_violations(page)
        if violations:
            found[f"{target.name} {target.path}"] = violations
        checked.append(target.name)
    page.close()
    assert len(checked) > 50
    assert found == {}, f"{len(found)} of {len(checked)} pages ({scheme}):\n" + json.dumps(found, indent=1)
