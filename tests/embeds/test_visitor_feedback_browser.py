"""What a visitor sees, in Debian's chromium driven by Playwright at 1440 and 390 px: under a finished answer of the
widget and of the hosted page, 👍/👎; a 👎 opens a comment, the comment is stored with the run (agents.Feedback, no
user), the thread reopened shows the rating pressed; LaTeX in the answer is drawn by the vendored KaTeX in both; axe
finds no serious or critical violation with the rating open. The test plays the runner (the frames of
tests/embeds/test_turn_renderer_surfaces.py), so the answer's text is known."""

from __future__ import annotations

import pytest

from tests.axe import assert_clean
from tests.embeds.test_turn_renderer_surfaces import (  # noqa: F401 — fixtures: the daphne and the shop's site
    ARTIFACTS,
    CHROMIUM,
    WIDGET_ROOT,
    _renderer_daphne,
    chromium,
    customer_site,
    frame,
    new_run,
    publish,
    record,
    server,
    watched,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]

ANSWER = "A circle's area is $A = \\pi r^2$, for a radius $r$."
WIDTHS = (1440, 390)


def answer_one_turn(embed, seen: set) -> str:
    """Be the runner of the turn the page just started: stream the answer, write its rows, complete it."""
    run = new_run(seen, conversation__surface="embed", embed_id=embed.pk)
    publish(run.pk, [frame("model_request_start"), frame("part_start", index=0, part_type="text"),
                     frame("text_delta", index=0, content=ANSWER), frame("final_result", output=ANSWER)])
    record(run, {"before": ANSWER}, "none")
    publish(run.pk, [frame("complete", status="completed", usage={"input_tokens": 10, "output_tokens": 5})])
    return str(run.pk)


def stored(run_id: str) -> list[tuple]:
    from agents.models import Feedback

    return list(Feedback.objects.filter(run_id=run_id).values_list("rating", "comment", "source", "user_id"))


def rate_down_with_a_comment(page, root: str, comment: str) -> None:
    """Click 👎 under the answer, write the comment, send it; wait until the page says thanks."""
    scope = page.locator("[data-agenticos-widget]") if root else page
    scope.locator(".turn-assistant [data-feedback='down']").click()
    page.wait_for_function(f"() => ({root or 'document'}).querySelector("
                           "\".turn-assistant [data-feedback='down'][aria-pressed='true']\")")
    scope.locator("[data-feedback-comment]").fill(comment)
    scope.locator("[data-feedback-form] button[type=submit]").click()
    page.wait_for_function(f"() => ({root or 'document'}).querySelector('.feedback-thanks')")


def test_a_visitor_rates_an_answer_on_the_hosted_page(server):
    from agenticos.models import Membership
    from tests import factories

    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password="pw-correct-horse-9")
    Membership.objects.create(organization=org, user=owner, role="owner")
    embed = factories.embed(factories.published_agent(org, owner, name="Shop Helper"), kind="page", created_by=owner)
    seen: set = set()
    with chromium() as browser:
        for width in WIDTHS:
            page = browser.new_page(viewport={"width": width, "height": 900}, bypass_csp=True)
            errors = watched(page)
            page.goto(f"{server}/e/{embed.public_key}")
            page.wait_for_function("() => !document.getElementById('send').disabled")
            page.locator("#input").fill("What is the area of a circle?")
            page.locator("#send").click()
            run_id = answer_one_turn(embed, seen)
            page.wait_for_function("() => document.querySelector('.turn-assistant[aria-busy=false] [data-feedback]')")
            # KaTeX drew the formula (MathML beside it for a screen reader), not the dollar signs.
            assert page.locator(".turn-assistant .katex").count() == 2
            assert "$" not in page.locator(".turn-assistant .turn-body").inner_text()

            rate_down_with_a_comment(page, "", "Which unit?")
            assert stored(run_id) == [("down", "Which unit?", "embed", None)]
            assert_clean(page, f"the hosted page with a rating ({width} px)")
            page.screenshot(path=str(ARTIFACTS / f"embeds-page-feedback-{width}.png"), full_page=True)

            page.reload()
            page.wait_for_function("() => document.querySelector(\".turn-assistant [data-feedback='down']"
                                   "[aria-pressed='true']\")")
            assert page.locator("[data-feedback='up']").get_attribute("aria-pressed") == "false"
            assert errors == []
            # The next width starts a thread of its own.
            page.get_by_role("button", name="New conversation").click()
            page.close()


def test_a_visitor_rates_an_answer_in_the_widget(server, customer_site):
    from agenticos.models import Membership
    from tests import factories

    port, pages = customer_site
    org = factories.organization(name="Acme")
    owner = factories.user(email="owner@example.com", password="pw-correct-horse-9")
    Membership.objects.create(organization=org, user=owner, role="owner")
    embed = factories.embed(factories.published_agent(org, owner, name="Shop Helper"), kind="widget", created_by=owner,
                            allowed_origins=[f"http://localhost:{port}"], launcher_text="Need help?")
    pages["/"] = ('<!doctype html><html lang="en"><head><title>Acme shop</title><link rel="icon" href="data:,"></head>'
                  f'<body><main><h1>Acme shop</h1></main><script src="{server}/api/v1/embed/{embed.public_key}/widget.js" '
                  'async></script></body></html>')
    seen: set = set()
    with chromium() as browser:
        for width in WIDTHS:
            # A context per width: its own localStorage, so its own visitor and thread.
            context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
            page = context.new_page()
            errors = watched(page)
            page.goto(f"http://localhost:{port}/")
            page.get_by_role("button", name="Need help?").click()
            box = page.locator("[data-agenticos-widget] textarea")
            box.fill("What is the area of a circle?")
            box.press("Enter")
            run_id = answer_one_turn(embed, seen)
            page.wait_for_function(f"() => {WIDGET_ROOT}.querySelector('.turn-assistant[aria-busy=false] [data-feedback]')")
            assert page.locator("[data-agenticos-widget] .turn-assistant .katex").count() == 2

            rate_down_with_a_comment(page, WIDGET_ROOT, "Which unit?")
            assert stored(run_id) == [("down", "Which unit?", "embed", None)]
            assert errors == []
            assert_clean(page, f"the shop's page with the widget's rating open ({width} px)")
            # axe reads the shadow root's stylesheets by XMLHttpRequest, which the browser refuses across origins
            # (the widget's own <link>s need no CORS): its refusals are the check's, not the widget's.
            errors[:] = [e for e in errors if "XMLHttpRequest" not in e and "net::ERR_FAILED" not in e]
            page.screenshot(path=str(ARTIFACTS / f"embeds-widget-feedback-{width}.png"))

            page.reload()
            page.get_by_role("button", name="Need help?").click()
            page.wait_for_function(f"() => {WIDGET_ROOT}.querySelector(\".turn-assistant [data-feedback='down']"
                                   "[aria-pressed='true']\")")
            # axe's refused requests can be reported after the filter above (console messages arrive on their own
            # time, more so on a loaded machine): they are still the check's.
            assert [e for e in errors if "XMLHttpRequest" not in e and "net::ERR_FAILED" not in e] == []
            context.close()
