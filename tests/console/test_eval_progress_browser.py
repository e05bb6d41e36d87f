"""An evaluation's results follow the run without htmx, in Debian's chromium against daphne: while the run goes
the results table is read again (refresh.js) until the run is finished, then it stops asking. No console error,
nothing the page's Content-Security-Policy refuses."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import Environment
from evals.models import SuiteRun
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-correct-horse-9"
TIMEOUT = 30_000


def test_a_running_evaluation_is_followed_until_it_finishes(live_server_url, browser):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    agent = factories.published_agent(org, owner, name="Helper")
    version = Environment.objects.get(agent=agent, name="production").version
    run = SuiteRun.objects.create(organization=org, agent=agent, suite_name="Smoke", target="1", version=version,
                                  status=SuiteRun.Status.RUNNING, started_by=owner, total=1)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(f"{live_server_url}/login/")
    page.get_by_label("Email").fill("owner@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server_url}/")

    page.goto(f"{live_server_url}/agents/{agent.pk}/evals/runs/{run.pk}/")
    progress = page.locator("[data-eval-progress]")
    assert progress.text_content().startswith("Running")
    with page.expect_response(lambda r: f"/runs/{run.pk}/" in r.url and r.request.headers.get("x-fragment") == "true"):
        pass  # the table is read again while the run goes
    SuiteRun.objects.filter(pk=run.pk).update(status=SuiteRun.Status.PASSED, passed=1)
    page.wait_for_function("() => document.querySelector('[data-eval-progress]').textContent.trim().startsWith('Passed')")
    assert page.locator("[data-eval-results]").get_attribute("data-refresh-url") is None  # finished: it stops
    assert page.locator("[data-eval-results]").count() == 1
    assert problems == [], problems
