"""An embed's hosted page passes the accessibility check (vendored axe-core, tests/axe.py): no serious or critical
violation of the WCAG 2 A and AA rules, before and after an answer, in the light and the dark scheme — in Debian's
chromium driven by Playwright, against daphne (whose address is its FRONTEND_URL, so the page is admitted) and the
real runner."""

from __future__ import annotations

import pytest

from tests import factories
from tests.axe import assert_clean
from tests.embeds.test_browser import ARTIFACTS, CHROMIUM, chromium

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


def test_the_hosted_page_has_no_serious_accessibility_violation(daphne_server, agent, builder, celery_worker):
    embed = factories.embed(agent, kind="page", created_by=builder, welcome="Welcome to **Acme** support.")
    with chromium() as browser:
        for scheme in ("light", "dark"):
            # bypass_csp: axe is injected by the test as a script tag, which the page's policy would refuse.
            page = browser.new_page(bypass_csp=True, color_scheme=scheme)
            page.goto(f"{daphne_server}/e/{embed.public_key}")
            page.wait_for_function("() => !document.getElementById('send').disabled", timeout=15_000)
            assert_clean(page, f"the hosted page ({scheme})")
            page.locator("#input").fill("What time is it?")
            page.locator("#send").click()
            page.wait_for_function("() => document.querySelectorAll('.turn.assistant').length && "
                                   "!document.getElementById('send').disabled", timeout=30_000)
            assert_clean(page, f"the hosted page with an answer ({scheme})")
            page.screenshot(path=str(ARTIFACTS / f"a11y-hosted-page-{scheme}.png"), full_page=True)
            page.close()
