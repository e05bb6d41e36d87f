"""The CDP Runtime domain is never enabled on a page the browser capability drives (spec: "Navegador web").

A page can tell: with Runtime on, Chromium wraps every `console.*` argument for the client, and wrapping an
Error reads its native `stack`, which runs the page's own `Error.prepareStackTrace`. The probe page below does
that on load, on a click, in a dedicated worker and in a cross-site frame (a process and a CDP target of its
own), shows the tally in its title and reports each result to the test's server. (The older probe, a
user-defined `stack` getter, no longer fires on Chromium 156: V8 skips user getters there, not the native one.)

The browse goes through the real tools on Debian's Chromium; the control runs the same tools with the capability's
session driving plain Playwright, which enables Runtime on every page, and the same probe catches it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from capabilities.browser import session as browser_session
from tests.capabilities.helpers import run, spec
from tests.fakes.web_pages import INTRANET, OTHER_SITE, SITE, browser_env, chromium, internal, site  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.browser]

PROBE = """
function probe() {
  const error = new Error('probe');
  const before = Error.prepareStackTrace;
  let seen = false;
  Error.prepareStackTrace = (err, frames) => { if (err === error) seen = true; return 'Error: probe'; };
  try { console.debug(error); } finally { Error.prepareStackTrace = before; }
  return seen;
}
"""


def probe_page(port: int) -> str:
    return f"""<!doctype html><html><head><title>probing</title></head><body>
<label for=n>Name</label><input id=n name=n><button onclick="check('click')">Probe again</button>
<iframe src="http://{OTHER_SITE}:{port}/frame"></iframe>
<script>{PROBE}
const seen = {{}};
let detected = 0;
function note(where, hit) {{
  seen[where] = (seen[where] || 0) + 1;
  if (hit) detected += 1;
  document.title = Object.keys(seen).sort().map((k) => k + '=' + seen[k]).join(' ') + ' detected=' + detected;
  fetch('/report?where=' + where + '&detected=' + (hit ? 1 : 0));
}}
function check(where) {{ note(where, probe()); }}
check('load');
const worker = new Worker(URL.createObjectURL(new Blob([{json.dumps(PROBE)} + 'postMessage(probe());'])));
worker.onmessage = (m) => note('worker', m.data);
window.addEventListener('message', (m) => {{ if (m.data && m.data.frame !== undefined) note('frame', m.data.frame); }});
</script></body></html>"""


FRAME = f"""<!doctype html><html><body><p>a frame</p><script>{PROBE}
parent.postMessage({{frame: probe()}}, '*');
</script></body></html>"""


class ProbeSite:
    """The probe page (reached as SITE) and its cross-site frame (as OTHER_SITE); every report recorded."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, int]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path == "/report":
                    query = parse_qs(parts.query)
                    site.reports.append((query["where"][0], int(query["detected"][0])))
                    body = b"ok"
                elif parts.path == "/frame":
                    body = FRAME.encode()
                else:
                    body = probe_page(site.port).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def detected(self) -> dict[str, int]:
        tally: dict[str, int] = {}
        for where, hit in self.reports:
            tally[where] = tally.get(where, 0) + hit
        return tally


@pytest.fixture
def probe_site():
    site = ProbeSite()
    yield site
    site.stop()


def browse(cdp_url: str, site: ProbeSite):
    """Open the probe page, type into it, click its button (the probe again, after the tools read the page and
    acted on it), then read it."""
    the_spec = spec({"id": "browser_use", "config": {"cdp_url": cdp_url}})
    return asyncio.run(run(the_spec, [
        ("browser_open", {"url": f"http://{SITE}:{site.port}/probe"}),
        ("browser_type", {"element": 1, "text": "Ada"}),
        ("browser_click", {"element": 2}),
        ("browser_read", {}),
    ]))


def test_a_page_cannot_tell_the_capability_enabled_the_runtime_domain(browser_env, probe_site):
    outcome = browse(browser_env.cdp_url, probe_site)
    opened, typed, clicked, read = outcome.returns
    assert "[1] text 'Name'" in opened and "(filled)" in typed
    assert "Title: click=1 frame=1 load=1 worker=1 detected=0" in read, read
    assert probe_site.detected() == {"load": 0, "click": 0, "worker": 0, "frame": 0}


def test_the_control_the_same_probe_catches_a_client_that_enables_runtime(browser_env, probe_site, monkeypatch):
    """The capability's own session driving plain Playwright (which sends Runtime.enable to every page, frame
    and worker it attaches to): the probe sees it everywhere, so the test above can fail."""
    from playwright.async_api import async_playwright

    monkeypatch.setattr(browser_session, "_playwright", lambda: async_playwright)
    outcome = browse(browser_env.cdp_url, probe_site)
    read = outcome.returns[-1]
    assert "Title: click=1 frame=1 load=1 worker=1 detected=4" in read, read
    assert probe_site.detected() == {"load": 1, "click": 1, "worker": 1, "frame": 1}


def test_without_the_browser_extra_the_tool_fails_visibly_naming_the_install_line(browser_env, probe_site,
                                                                                   monkeypatch):
    monkeypatch.setitem(sys.modules, "patchright.async_api", None)  # what an install without the extra has
    outcome = browse(browser_env.cdp_url, probe_site)
    assert 'pip install "agenticos[browser]"' in outcome.returns[0]
    assert probe_site.reports == []  # nothing was opened


@pytest.mark.parametrize("listed", [False, True])
def test_a_pages_websocket_is_asked_about_inside_the_browser_and_refused_into_the_deployment(browser_env, site,
                                                                                              internal, listed):
    """Without Runtime there is no binding for Playwright's socket route: the page's WebSocket constructor asks the
    browse first (page_js.SOCKET_GUARD), and the question is answered by the browse (its route or its worker guard), never by the site."""
    from capabilities.browser.config import BrowserConfig
    from capabilities.browser.session import BrowserSession

    target = f"ws://{INTRANET}:{internal.port}/ws"
    config = BrowserConfig(cdp_url=browser_env.cdp_url, allowed_domains=[SITE, INTRANET] if listed else None)

    async def open_socket():
        tab = BrowserSession(config=config)
        try:
            await tab.open(f"http://{SITE}:{site.port}/socket?to={target}")
            await tab.page.wait_for_function("document.title === 'closed'", timeout=10000)
            return tab.policy.refused, tab._socket_check
        finally:
            await tab.close()

    refused, check = asyncio.run(open_socket())
    assert site.paths() == ["/socket"]  # the question about the socket never reached the site
    assert check.startswith("/__socket-check-") and len(check) > len("/__socket-check-") + 16
    if listed:  # the control: the same socket reaches the internal server once its host is listed
        assert internal.paths() == ["/ws"] and refused == []
    else:
        assert internal.hits == [] and refused == [target]
