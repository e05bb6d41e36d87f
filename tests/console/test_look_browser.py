"""The console's look (issue 45 "The look"), in Debian chromium via Playwright: round chart ticks and whole date
labels, status badges in their colours in both themes, "New chat" on one line, no page wider than a phone, and the
screenshots of the chat, the Builder, Activity and Usage in both themes at 1440 and 390 px (test-artifacts/console/
look-<screen>-<theme>-<width>.png)."""

from __future__ import annotations

import colorsys
from decimal import Decimal

import pytest

from tests import factories
from tests.console.browser_steps import sign_in
from tests.console.conftest import ARTIFACTS, ROOT, make_turn

pytestmark = [pytest.mark.browser]
TIMEOUT = 60_000  # the Builder is a heavy page on a loaded machine
CHARTS = ROOT / "console" / "static" / "console" / "charts.js"


def charts_page(browser):
    page = browser.new_page(viewport={"width": 800, "height": 600})
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(path=str(CHARTS))
    return page


def test_chart_ticks_are_round_numbers(browser):
    page = charts_page(browser)
    ticks = page.evaluate("""() => [[0, 30.75], [0, 7], [0, 41], [-5, 12], [0, 0.0123], [0, 0]]
        .map(([low, high]) => AgenticCharts.niceTicks(low, high))""")
    assert ticks == [[0, 10, 20, 30, 40], [0, 2, 4, 6, 8], [0, 20, 40, 60], [-5, 0, 5, 10, 15],
                     [0, 0.005, 0.01, 0.015], [0, 0.5, 1]]
    # Counts never get a tick between two whole numbers.
    assert page.evaluate("() => AgenticCharts.niceTicks(0, 3, 4, true)") == [0, 1, 2, 3]
    assert page.evaluate("() => AgenticCharts.niceTicks(0, 1, 4, true)") == [0, 1]
    page.close()


def test_a_chart_labels_its_dates_whole_and_inside_the_card(browser):
    page = charts_page(browser)
    days = [f"2026-11-{d:02d}" for d in range(1, 31)]
    found = page.evaluate("""(days) => {
        const out = {};
        for (const [type, x] of [["line", days], ["bar", days], ["line", days.slice(0, 2)]]) {
          const svg = AgenticCharts.render({kind: "chart", chart_type: type, title: "Runs", x_values: x,
                                            series: [{name: "Runs", values: x.map((_, i) => (i * 7) % 11)}]});
          document.body.replaceChildren(svg);
          svg.style.width = "560px";
          const labels = [...svg.querySelectorAll(".chart-grid text")].filter(t => /^\\d{4}-/.test(t.textContent));
          const boxes = labels.map(t => t.getBBox());
          const inside = boxes.every(b => b.x >= 0 && b.x + b.width <= 560);
          const apart = boxes.every((b, i) => i === 0 || boxes[i - 1].x + boxes[i - 1].width <= b.x);
          const yTicks = [...svg.querySelectorAll(".chart-grid text")].filter(t => !/^\\d{4}-/.test(t.textContent))
            .map(t => t.textContent);
          out[type + x.length] = {inside, apart, whole: labels.every(t => x.includes(t.textContent)),
                                  shown: labels.length, yTicks, dots: svg.querySelectorAll("circle").length};
        }
        return out;
    }""", days)
    for key, chart in found.items():
        assert chart["inside"] and chart["apart"] and chart["whole"] and chart["shown"] >= 2, (key, chart)
        assert all(t.isdigit() for t in chart["yTicks"]), (key, chart)  # counts: 0, 2, 4…, never 2.5
    assert found["line30"]["dots"] == 30 and found["line2"]["dots"] == 2  # each value is a dot, two are two
    page.close()


def hue_of(rgb: str) -> tuple[float, float]:
    r, g, b = (int(v) / 255 for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    h, _l, s = colorsys.rgb_to_hls(r, g, b)
    return h * 360, s


def colour_name(rgb: str) -> str:
    hue, saturation = hue_of(rgb)
    if saturation < .2:
        return "grey"
    if hue < 20 or hue >= 330:
        return "red"
    if hue < 60:
        return "amber"
    if hue < 170:
        return "green"
    if hue < 260:
        return "blue"
    return "other"


@pytest.fixture
def look_world(transactional_db):
    """An owner's organization with a run in each status and a week of spend; the running run is ended after the
    test, before the Celery worker's guard (asked for after live_server_url) looks for runs left running."""
    from agents.models import Run

    made = world()
    yield made
    Run.objects.filter(pk=made[3]["running"].pk).update(status="cancelled")


def world(org_name="Acme"):
    from agents.models import Run

    org = factories.organization(name=org_name)
    owner = factories.member(org, "owner", email="owner@example.com")
    agent = factories.published_agent(org, owner, name="Helper", capabilities=[{"id": "clock"}, {"id": "charts"}],
                                      starter_prompts=["What time is it?", "Chart my week"])
    runs = {}
    for status in ("completed", "failed", "awaiting_approval", "running", "cancelled"):
        _c, runs[status] = make_turn(org, owner, agent, prompt=f"A {status} run", status=status)
    from datetime import timedelta

    from django.utils import timezone

    from governance.models import SpendEntry

    for back, cost in ((0, "0.012"), (2, "0.030"), (5, "0.004")):
        when = timezone.now() - timedelta(days=back)
        SpendEntry.objects.create(organization=org, agent=agent, run=runs["completed"], surface="web", model="demo",
                                  input_tokens=120, output_tokens=30, cost_usd=Decimal(cost), created_at=when)
        Run.objects.filter(pk=runs["failed"].pk).update(created_at=when)
    return org, owner, agent, runs


@pytest.mark.django_db(transaction=True)
def test_status_badges_wear_their_colour_in_both_themes(live_server_url, browser, look_world):
    _org, _owner, _agent, runs = look_world
    expected = {"completed": "green", "failed": "red", "awaiting_approval": "amber", "running": "blue",
                "cancelled": "grey"}
    for scheme in ("light", "dark"):
        page = browser.new_page(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
        page.set_default_timeout(TIMEOUT)
        sign_in(page, live_server_url, "owner@example.com", then="/activity/")
        seen = {}
        for status, run in runs.items():
            badge = page.locator(f'[data-run-row="{run.pk}"] .badge[data-status="{status}"]')
            seen[status] = colour_name(badge.evaluate("b => getComputedStyle(b).color"))
        assert seen == expected, scheme
        page.goto(f"{live_server_url}/activity/runs/{runs['failed'].pk}/")
        badge = page.locator('.badge[data-status="failed"]').first
        assert colour_name(badge.evaluate("b => getComputedStyle(b).color")) == "red", scheme
        page.close()


SCREENS = {"chat": "/chat/{conversation}/", "builder": "/agents/{agent}/", "activity": "/activity/", "usage": "/usage/"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1440, 390])
def test_the_screens_fit_and_are_photographed_in_both_themes(live_server_url, browser, look_world, width):
    _org, _owner, agent, runs = look_world
    conversation = runs["completed"].conversation_id
    for scheme in ("light", "dark"):
        page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=scheme)
        page.set_default_timeout(TIMEOUT)
        sign_in(page, live_server_url, "owner@example.com")
        for screen, path in SCREENS.items():
            page.goto(live_server_url + path.format(conversation=conversation, agent=agent.pk))
            page.wait_for_load_state("load")
            if screen == "usage":
                page.locator('[data-usage-chart="daily"] svg').wait_for()
            if screen == "chat":
                page.locator("[data-transcript]").wait_for()
            wider = page.evaluate("() => document.scrollingElement.scrollWidth")
            assert wider <= width, f"{screen} at {width} px ({scheme}) is {wider} px wide"
            if screen == "chat":  # "New chat" keeps its words on one line
                new_chat = page.get_by_role("link", name="New chat")
                if new_chat.is_visible():
                    lines = new_chat.evaluate("""a => { const r = document.createRange(); r.selectNodeContents(a);
                        return new Set([...r.getClientRects()].map(box => Math.round(box.top))).size; }""")
                    assert lines == 1, f"New chat is on {lines} lines at {width} px"
            if screen == "usage":  # the charts fit their cards
                overflow = page.evaluate("""() => [...document.querySelectorAll('.usage-chart svg')]
                    .filter(svg => svg.getBoundingClientRect().right > svg.closest('.card').getBoundingClientRect().right + 1)
                    .length""")
                assert overflow == 0
            page.screenshot(path=str(ARTIFACTS / f"look-{screen}-{scheme}-{width}.png"), full_page=True)
        page.close()
    for screen in SCREENS:
        for scheme in ("light", "dark"):
            assert (ARTIFACTS / f"look-{screen}-{scheme}-{width}.png").stat().st_size > 10_000
