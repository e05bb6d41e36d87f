"""The main flow in a real browser: chat streams, the rail folds, a chart renders, an approval continues the
turn, Activity shows the run, and the reopened conversation shows the same turn."""

from __future__ import annotations

import pytest

from agenticos.models import Membership
from agents.models import ModelProfile
from tests import factories
from tests.console.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-correct-horse-9"
TIMEOUT = 30_000

# Every rendered part of every turn, in order: what must be identical live and reopened.
TURN_SHAPE_JS = """() => Array.from(document.querySelectorAll('[data-transcript] .turn')).map(t => ({
  role: t.dataset.turn,
  parts: Array.from(t.querySelectorAll('.turn-body > [data-part]')).map(p => ({
    type: p.dataset.part,
    text: p.dataset.part === 'text' ? p.textContent.trim() : '',
    steps: Array.from(p.querySelectorAll('[data-step]')).map(s => [s.dataset.step, s.dataset.status,
      s.querySelector('[data-step-line]').textContent]),
    fold: (p.querySelector('[data-fold]') || {}).textContent || '',
    charts: p.querySelectorAll('svg.chart-svg').length,
  })),
}))"""


def sign_in(page, base_url, email):
    page.goto(f"{base_url}/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/")


def send(page, text):
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def shot(page, name):
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_chat_streams_folds_charts_parks_for_approval_and_reopens_identically(live_server_url, browser):
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password=PASSWORD)
    Membership.objects.create(organization=org, user=owner, role="owner")
    factories.published_agent(org, owner, name="Helper", capabilities=[
        {"id": "clock"}, {"id": "code_execution"},
        {"id": "charts", "tool_approval": {"create_chart": "required"}},
    ])
    assert ModelProfile.objects.filter(organization=org).exists()

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(TIMEOUT)
    sign_in(page, live_server_url, "owner@example.com")
    page.goto(f"{live_server_url}/chat/")

    # Two tools in one batch: the rail shows the last and folds the earlier one.
    send(page, "What time is it? And calculate 12 * 7")
    page.wait_for_selector(".turn-usage [data-tokens]")
    page.wait_for_selector("[data-fold]")
    assert page.locator("[data-fold]").first.text_content().strip() == "1 earlier step"
    assert page.locator(".answer").last.text_content().strip() != ""
    shot(page, "chat-folded-rail")

    # A gated chart: the approval panel appears; approving continues the turn and the chart renders.
    send(page, "Draw a chart please")
    page.wait_for_selector("[data-approval]")
    assert "x_values" in page.locator(".approval-args").text_content()
    shot(page, "chat-approval-panel")
    page.get_by_role("button", name="Approve").click()
    page.wait_for_selector("svg.chart-svg")
    page.wait_for_function("() => document.querySelectorAll('.turn-usage').length >= 2 && "
                           "!document.querySelector('[data-approval]')")
    page.wait_for_function("() => document.querySelector('[data-transcript]').getAttribute('aria-busy') === 'false'")
    shot(page, "chat-chart")
    live = page.evaluate(TURN_SHAPE_JS)

    page.reload()
    page.wait_for_selector("svg.chart-svg")
    reopened = page.evaluate(TURN_SHAPE_JS)
    assert reopened == live
    assert [t["role"] for t in live] == ["user", "assistant", "user", "assistant"]
