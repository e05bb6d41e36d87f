"""What a person sees, in Debian's chromium driven by Playwright, against daphne and the real runner:
a customer page on one localhost origin loads widget.js from the server on another origin and gets an
answer streamed in; a disallowed origin gets no working widget; a hosted page answers, replays its
thread after a reload, and its new-thread button starts a fresh one. Screenshots go to test-artifacts/."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests import factories
from tests.browser_servers import lent_chromium

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"),
]


@pytest.fixture(scope="module")
def customer_site():
    """A customer's own site on another origin: serves whatever HTML the test puts in `pages`."""
    pages: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 — http.server's spelling
            body = pages.get(self.path.split("?")[0])
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write((body or "not found").encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # binds port 0 itself: nothing can take it between
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield port, pages
    server.shutdown()


@contextmanager
def chromium():
    """Lent after the test wrote its rows: Playwright's sync API marks an event loop running on this thread, and
    Django refuses database calls from a thread with a running loop. The process's Chromium
    (tests/browser_servers.py), with no context of an earlier test's; launching one per test was seconds of each."""
    ARTIFACTS.mkdir(exist_ok=True)
    with lent_chromium() as instance:
        yield instance


def customer_page(script_src: str) -> str:
    # A page that already runs its own code (and a global `$`), as a customer's site would.
    return f"""<!doctype html><html><head><title>Acme shop</title>
<script>window.$ = function () {{ return "not jquery"; }}; window.AgenticOSContext = {{ plan: "pro" }};</script>
</head><body><h1>Acme shop</h1><p>Products and prices.</p>
<script src="{script_src}" async></script></body></html>"""


def test_a_widget_on_a_customer_site_answers_word_by_word(
    daphne_server, customer_site, agent, builder, celery_worker
):
    port, pages = customer_site
    widget = factories.embed(
        agent, kind="widget", created_by=builder, allowed_origins=[f"http://localhost:{port}"],
        title="Acme help", greeting="Hi! **Ask me** anything.", launcher_text="Need help?",
    )
    pages["/"] = customer_page(f"{daphne_server}/api/v1/embed/{widget.public_key}/widget.js")
    with chromium() as browser:
        _ask_the_widget(browser, port)


def _ask_the_widget(browser, port: int) -> None:
    page = browser.new_page()
    page.goto(f"http://localhost:{port}/")
    page.get_by_role("button", name="Need help?").click()
    assert "Ask me" in page.locator("[data-agenticos-widget] .a").first.inner_text()
    page.locator("[data-agenticos-widget] textarea").fill("Hello, who are you?")
    page.locator("[data-agenticos-widget] textarea").press("Enter")
    answer = page.locator("[data-agenticos-widget] .b.a").nth(1)
    answer.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => { const h = document.querySelector('[data-agenticos-widget]');"
        " const b = h.shadowRoot.querySelectorAll('.b.a'); return b.length > 1 && b[1].innerText.length > 20"
        " && !b[1].classList.contains('t'); }",
        timeout=30_000,
    )
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "embeds-widget-answer.png"))
    assert "demo" in answer.inner_text().lower()
    assert page.locator("[data-agenticos-widget] .e").count() == 0


def test_a_disallowed_origin_shows_no_working_widget(daphne_server, customer_site, agent, builder):
    port, pages = customer_site
    widget = factories.embed(
        agent, kind="widget", created_by=builder, allowed_origins=["https://somewhere-else.example"],
        launcher_text="Need help?",
    )
    pages["/elsewhere"] = customer_page(f"{daphne_server}/api/v1/embed/{widget.public_key}/widget.js")
    with chromium() as browser:
        _see_the_refusal(browser, port)


def _see_the_refusal(browser, port: int) -> None:
    page = browser.new_page()
    page.goto(f"http://localhost:{port}/elsewhere")
    page.get_by_role("button", name="Need help?").click()
    page.locator("[data-agenticos-widget] textarea").fill("Hello?")
    page.locator("[data-agenticos-widget] textarea").press("Enter")
    error = page.locator("[data-agenticos-widget] .e")
    error.wait_for(timeout=10_000)
    page.screenshot(path=str(ARTIFACTS / "embeds-widget-refused.png"))
    assert "not available" in error.inner_text()
    assert page.locator("[data-agenticos-widget] .b.a").count() == 0
    assert page.locator("[data-agenticos-widget] button[type=submit]").is_disabled()


def test_a_hosted_page_answers_replays_its_thread_and_starts_a_new_one(
    daphne_server, agent, builder, celery_worker
):
    embed = factories.embed(agent, kind="page", created_by=builder, welcome="Welcome to **Acme** support.")
    with chromium() as browser:
        _use_the_hosted_page(browser, daphne_server, embed.public_key)


def _use_the_hosted_page(browser, daphne_server: str, key: str) -> None:
    page = browser.new_page()
    page.goto(f"{daphne_server}/e/{key}")
    assert page.locator(".welcome strong").inner_text() == "Acme"
    send = page.locator("#send")
    page.wait_for_function("() => !document.getElementById('send').disabled", timeout=10_000)
    page.locator("#input").fill("Hello from the hosted page")
    send.click()
    page.wait_for_function(
        "() => { const t = document.querySelectorAll('.turn.assistant .turn-body');"
        " return t.length && t[t.length-1].innerText.length > 20 && !document.getElementById('send').disabled; }",
        timeout=30_000,
    )
    assert page.locator(".turn.assistant .name").first.inner_text() == "Shop Helper"
    assert page.locator(".turn.assistant .avatar").first.inner_text() == "S"
    assert page.locator(".turn .time").count() == 2
    page.screenshot(path=str(ARTIFACTS / "embeds-page-answer.png"))

    page.reload()
    page.wait_for_function("() => document.querySelectorAll('.turn').length === 2", timeout=10_000)
    assert page.locator(".turn.user .content").inner_text() == "Hello from the hosted page"
    page.screenshot(path=str(ARTIFACTS / "embeds-page-replayed.png"))

    key_before = page.evaluate(f"() => localStorage.getItem('agenticos-visitor:{key}')")
    page.get_by_role("button", name="New conversation").click()
    page.wait_for_function("() => !document.getElementById('send').disabled", timeout=10_000)
    assert page.locator(".turn").count() == 0
    key_after = page.evaluate(f"() => localStorage.getItem('agenticos-visitor:{key}')")
    assert key_after != key_before and len(key_after) == 32
    page.reload()
    page.wait_for_function("() => !document.getElementById('send').disabled", timeout=10_000)
    assert page.locator(".turn").count() == 0
    page.screenshot(path=str(ARTIFACTS / "embeds-page-new-thread.png"))
