"""Delegation panels in a real browser (Debian chromium via Playwright) against daphne + a real Celery worker:
the lead hands work to a published researcher; its panel opens while the researcher works, streams its text,
closes with its status and cost — and the reopened conversation draws the same panel."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import Run
from tests import factories
from tests.capabilities.test_subagents import Team, _pair, call, returns
from tests.console.conftest import ARTIFACTS
from tests.console.test_browser_chat import PASSWORD, TIMEOUT, send, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PANEL_JS = """() => Array.from(document.querySelectorAll('[data-delegation]')).map(p => ({
  task: p.dataset.delegation,
  depth: p.dataset.depth,
  name: p.querySelector('[data-delegation-name]').textContent,
  status: p.querySelector('[data-delegation-status]').dataset.delegationStatus,
  text: Array.from(p.querySelectorAll('[data-part=text]')).map(t => t.textContent.trim()),
  usage: (p.querySelector('[data-delegation-usage]') || {}).textContent || '',
}))"""


def test_a_delegation_is_a_panel_live_and_the_same_panel_reopened(live_server_url, browser, scripted_model):
    team = Team()
    scripted_model(team.model())
    team.role("You are the lead.",
              call("task", {"description": "Find the capital of France.", "subagent_type": "researcher"}),
              lambda m: "The researcher says: " + str(returns(m)[-1]).split("\n\nChat Trace ID")[0])
    # The researcher takes a moment, so the open panel can be seen working before it answers.
    team.role("You are the researcher.", 2.0, "Paris is the capital of France.")
    org = factories.organization(name="Acme")
    owner = factories.user(email="lead-owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    profile = factories.model_profile(org, label="Team")
    _researcher, lead, _version = _pair(org, owner, profile)

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "lead-owner@example.com", then=f"/chat/?agent={lead.pk}")
    send(page, "What is the capital of France?")

    page.wait_for_selector("[data-delegation] [data-delegation-status=running]")
    page.screenshot(path=str(ARTIFACTS / "chat-delegation-working-1440.png"), full_page=True)
    page.wait_for_selector("[data-delegation] [data-delegation-status=completed]")
    page.wait_for_function("() => document.querySelectorAll('.turn-usage').length >= 1")
    live = page.evaluate(PANEL_JS)
    assert len(live) == 1, live
    [panel] = live
    assert panel["name"] == "researcher" and panel["depth"] == "1"
    assert panel["text"] == ["Paris is the capital of France."]
    assert "tokens" in panel["usage"] and "$" in panel["usage"]
    # The child's words are in its panel, not in the lead's answer.
    answers = page.locator(".turn-assistant > .turn-body > [data-part=text]").all_text_contents()
    assert [a.strip() for a in answers] == ["The researcher says: Paris is the capital of France."]
    page.screenshot(path=str(ARTIFACTS / "chat-delegation-done-1440.png"), full_page=True)

    page.reload()
    page.wait_for_selector("[data-delegation]")
    assert page.evaluate(PANEL_JS) == live
    assert Run.objects.filter(agent=lead).count() == 1 and Run.objects.count() == 1
