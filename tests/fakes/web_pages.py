"""Local web pages for the browser capability's tests, and Debian's Chromium as the browser service.

`WebPages`: real HTTP on 127.0.0.1 (a thread), every request recorded. Pages: `/form` (name, email, plan,
POST → `/thanks`), `/flow/1` → `/flow/2` → `/flow/3` (a multi-page flow), `/login` (POST user+password →
`/account` with a session cookie), `/cookie/set` and `/cookie/show`, `/redirect?to=<url>` (302), `/fetcher?to=<url>`
(the page's own `fetch()`; its title says what came back), `/socket?to=<ws url>` (the page's own WebSocket), `/wedge` (a page whose script loops for ever once loaded), `/socket-around?to=<ws url>&how=` (the ways around its check), `/popup?to=<url>` (a link to a new tab, a window.open button), `/framed?to=<url>` (an iframe), `/worker?to=<url>` (a dedicated worker's `fetch()`; the title says what came back), `/worker-socket?to=<ws url>&kind=`
(a worker's own WebSocket: dedicated, script, nested or shared — where a browser has no SharedWorker the
title says 'no shared workers'; see `_worker_socket`; in a frame it tells
the page around it too, whose title `/framed` then shows), and any `/__socket-check-…` path answered 'ok', as a
hostile site that knows the browser's socket guard would answer its question (page_js.SOCKET_GUARD). The tests reach it by a name Chromium maps to
127.0.0.1 (`--host-resolver-rules`) while netguard's resolver is told that name is public, so the page is a
"site on the internet" and 127.0.0.1 itself stays the deployment's inside — where a second `WebPages`
(the "internal" server) records whether anything reached it.

`Chromium`: `/usr/bin/chromium --headless=new` (with the browser service's hardening flags) with remote debugging on an ephemeral loopback port (read from
its DevToolsActivePort file), its own profile directory, stopped after the test module.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

CHROMIUM = "/usr/bin/chromium"


@dataclass
class Hit:
    method: str
    path: str
    form: dict[str, list[str]] = field(default_factory=dict)
    cookie: str = ""
    headers: dict[str, str] = field(default_factory=dict)


def _socket_code(target: str) -> str:
    """A worker's script: open a WebSocket to `target`, post 'open' or 'closed' to whoever listens."""
    return (f"const ws = new WebSocket({json.dumps(target)}); const say = (m) => self.__say ? self.__say(m) : postMessage(m);"
            " ws.onopen = () => say('open'); ws.onclose = () => say('closed');")


def _worker_socket(target: str, kind: str) -> str:
    """The page's script for `/worker-socket`: a worker of `kind` opens the WebSocket; the title says how it ended.
    dedicated: from a blob; script: from a URL on this site; nested: a worker a blob worker starts; shared: a
    shared worker from a blob."""
    code = json.dumps(_socket_code(target))
    blob = "URL.createObjectURL(new Blob([code]))"
    if kind == "dedicated":
        start = f"const w = new Worker({blob}); w.onmessage = (m) => document.title = m.data;"
    elif kind == "script":
        start = (f"const w = new Worker('/socket-worker.js?to=' + encodeURIComponent({json.dumps(target)}));"
                 " w.onmessage = (m) => document.title = m.data;")
    elif kind == "nested":
        outer = json.dumps("onmessage = (m) => { const n = new Worker(m.data); n.onmessage = (e) => postMessage(e.data); };")
        start = (f"const w = new Worker(URL.createObjectURL(new Blob([{outer}]))); w.postMessage({blob});"
                 " w.onmessage = (m) => document.title = m.data;")
    elif kind == "shared":  # from the page, else from a fresh frame's constructor
        shared = json.dumps("onconnect = (e) => { self.__say = (m) => e.ports[0].postMessage(m); ")
        start = ("const f = document.createElement('iframe'); document.body.appendChild(f);"
                 " const Shared = self.SharedWorker || f.contentWindow.SharedWorker;"
                 " if (!Shared) { document.title = 'no shared workers'; } else {"
                 f" const w = new Shared(URL.createObjectURL(new Blob([{shared} + code + '}};'])));"
                 " w.port.onmessage = (m) => document.title = m.data; }")
    else:
        raise ValueError(kind)
    start = start.replace("document.title = m.data", "say(m.data)")
    say = "const say = (t) => { document.title = t; if (parent !== self) parent.postMessage(t, '*'); };"
    return f"<script>{say} const code = {code}; {start}</script>"


def _page(title: str, body: str) -> bytes:
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


PAGES = {
    "/form": _page("Contact", """<h1>Contact us</h1><form method=post action=/thanks>
        <label for=n>Name</label><input id=n name=name>
        <label for=e>Email</label><input id=e name=email type=email>
        <label for=p>Plan</label><select id=p name=plan><option>Free</option><option>Pro</option></select>
        <button type=submit>Send</button></form>"""),
    "/flow/1": _page("Shop", "<h1>Boots</h1><a href=/flow/2>See size 42</a>"),
    "/flow/2": _page("Size 42", "<h1>Size 42 boots</h1><form action=/flow/3><button>Order</button></form>"),
    "/flow/3": _page("Ordered", "<h1>Order confirmed</h1><p>Your order number is ORD-4242.</p>"),
    "/login": _page("Sign in", """<form method=post action=/account><label for=u>User</label><input id=u name=user>
        <label for=w>Password</label><input id=w name=password type=password><button>Sign in</button></form>"""),
}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _record(self, form: dict[str, list[str]] | None = None) -> urlsplit:
        parts = urlsplit(self.path)
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.server.pages.hits.append(Hit(self.command, parts.path, form or {}, self.headers.get("Cookie", ""), headers))
        return parts

    def do_GET(self) -> None:
        parts = self._record()
        query = parse_qs(parts.query)
        if parts.path in PAGES:
            return self._send(200, PAGES[parts.path])
        if parts.path == "/redirect":
            return self._send(302, b"", {"Location": query["to"][0]})
        if parts.path == "/fetcher":
            target = html.escape(query["to"][0], quote=True)
            script = (f"<script>fetch('{target}').then(r => r.text()).then(t => document.title = 'got ' + t,"
                      " e => document.title = 'refused')</script>")
            return self._send(200, _page("fetching", "<p>Fetching.</p>" + script))
        if parts.path == "/socket":
            target = html.escape(query["to"][0], quote=True)
            script = (f"<script>const ws = new WebSocket('{target}'); ws.onopen = () => document.title = 'open';"
                      " ws.onclose = () => document.title = 'closed';</script>")
            return self._send(200, _page("connecting", "<p>Connecting.</p>" + script))
        if parts.path == "/socket-around":
            # The native constructor reached around the wrapped one: from a fresh about:blank frame, through a
            # socket's prototype, or from a new window's document before anything closed it.
            target = json.dumps(query["to"][0])
            how = query["how"][0]
            native = {"frame": "(() => { const f = document.createElement('iframe'); document.body.appendChild(f);"
                               " return f.contentWindow.WebSocket; })()",
                      "proto": "Object.getPrototypeOf(new WebSocket('ws://127.0.0.1:9/')).constructor",
                      "popup": "window.open('about:blank').WebSocket",
                      "blank": "window.open('', '_blank').WebSocket"}.get(how, "WebSocket")
            # "twice": an address that names this site when checked and the target when the socket reads it.
            address = (f"(() => {{ let n = 0; return {{ toString: () => n++ ? {target} : 'ws://' + location.host + '/' }}; }})()"
                       if how == "twice" else target)
            if how == "stream":  # WebSocketStream: its `opened` settles (or fails) as the handshake does
                script = (f"<script>const s = new WebSocketStream({target}); s.opened.then(() => document.title = 'open',"
                          " () => document.title = 'closed');</script>")
            else:
                script = (f"<script>let ws; try {{ ws = new ({native})({address}); }} catch (e) {{ document.title = 'closed'; }}"
                          " if (ws) { ws.onopen = () => document.title = 'open'; ws.onclose = () => document.title = 'closed'; }"
                          "</script>")
            return self._send(200, _page("connecting", "<p>Connecting.</p>" + script))
        if parts.path == "/worker":
            target = html.escape(query["to"][0], quote=True)
            script = (f"<script>const code = \"fetch('{target}').then(r => r.text()).then(t => postMessage('got ' + t),"
                      " e => postMessage('refused'))\"; const w = new Worker(URL.createObjectURL(new Blob([code])));"
                      " w.onmessage = (m) => document.title = m.data;</script>")
            return self._send(200, _page("working", "<p>Working.</p>" + script))
        if parts.path == "/worker-socket":
            return self._send(200, _page("connecting", "<p>Connecting.</p>" + _worker_socket(
                query["to"][0], query.get("kind", ["dedicated"])[0])))
        if parts.path == "/socket-worker.js":
            return self._send(200, _socket_code(query["to"][0]).encode(), {"Content-Type": "text/javascript"})
        if parts.path == "/framed":
            target = html.escape(query["to"][0], quote=True)
            said = "<script>addEventListener('message', (m) => document.title = String(m.data));</script>"
            return self._send(200, _page("framed", f"<p>A frame:</p><iframe src='{target}'></iframe>{said}"))
        if parts.path == "/popup":
            target = html.escape(query["to"][0], quote=True)
            return self._send(200, _page("popup", f"<a href='{target}' target=_blank>Open it</a>"
                                                  f"<button onclick=\"window.open('{target}')\">Window</button>"))
        if parts.path == "/cookie/set":
            return self._send(200, _page("Set", "<p>cookie set</p>"), {"Set-Cookie": "session=alice; Path=/"})
        if parts.path == "/cookie/show":
            cookie = html.escape(self.headers.get("Cookie", "") or "no cookie")
            return self._send(200, _page("Cookie", f"<p>Cookie: {cookie}</p>"))
        if parts.path == "/wedge":  # loads, then its renderer never answers again (a page that loops for ever)
            return self._send(200, _page("wedge", "<p>about to loop</p>"
                                                  "<script>setTimeout(() => { for (;;) {} }, 300)</script>"))
        if parts.path == "/secret":
            return self._send(200, _page("internal", "<p>internal secret 7731</p>"))
        if parts.path.startswith("/__socket-check-"):  # a socket check that reached the site: it says yes
            return self._send(200, b"ok", {"Access-Control-Allow-Origin": "*"})
        self._send(404, _page("Not found", "<p>nothing here</p>"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        parts = self._record(form)
        if parts.path == "/thanks":
            name = html.escape(form.get("name", [""])[0])
            return self._send(200, _page("Thanks", f"<h1>Thanks, {name}</h1><p>We will write soon.</p>"))
        if parts.path == "/account":
            return self._send(200, _page("Account", "<h1>Signed in</h1>"), {"Set-Cookie": "session=signed; Path=/"})
        self._send(404, _page("Not found", ""))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    pages: WebPages


class WebPages:
    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.pages = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> WebPages:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def paths(self) -> list[str]:
        return [hit.path for hit in self.hits]


# How long a test waits for a Chromium to answer: its start, and (browser_env) the capability's first connection.
STARTUP_SECONDS = 120


class Chromium:
    """Debian's Chromium as a browser service. `host_rules` maps test names to 127.0.0.1."""

    def __init__(self, host_rules: str = "", hardened: bool = True, port: int = 0) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="agenticos-chromium-"))
        self.host_rules = host_rules
        self.hardened = hardened
        self.proc: subprocess.Popen | None = None
        self.port = port  # 0: one Chromium picks; a given one: a restarted service at the address it had

    def start(self) -> Chromium:
        from config.launcher import BROWSER_HARDENING, BROWSER_QUIET

        args = [CHROMIUM, "--headless=new", "--remote-debugging-address=127.0.0.1",
                f"--remote-debugging-port={self.port}", f"--user-data-dir={self.profile}", "--disable-gpu",
                "--disable-dev-shm-usage", *BROWSER_QUIET]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox (this test machine)
        if self.host_rules:
            args.append(f"--host-resolver-rules={self.host_rules}")
        if self.hardened:  # the flags `make run` and docker-compose start the browser service with
            args += BROWSER_HARDENING
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        # On a loaded 2-core machine a just-started Chromium wrote its port but took more than 30 s to answer
        # its first DevTools client: the fixture waits (bounded, ending on the answer) until one is answered,
        # so the test's own first connection meets a browser that is up.
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if not self.port and marker.exists() and marker.read_text().strip():
                self.port = int(marker.read_text().split()[0])
            if self.port and self._answers_a_client(deadline):
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"chromium did not answer a DevTools client within {STARTUP_SECONDS} s")

    def _answers_a_client(self, deadline: float) -> bool:
        """A browser-level DevTools connection, as connect_over_cdp opens it, gets an answer."""
        import httpx
        from websockets.exceptions import WebSocketException
        from websockets.sync.client import connect

        try:
            left = max(deadline - time.monotonic(), 1)
            endpoint = httpx.get(f"{self.cdp_url}/json/version", timeout=left).json()["webSocketDebuggerUrl"]
            with connect(endpoint, open_timeout=max(deadline - time.monotonic(), 1), max_size=None) as devtools:
                devtools.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
                return json.loads(devtools.recv(timeout=max(deadline - time.monotonic(), 1))).get("id") == 1
        except (OSError, httpx.HTTPError, WebSocketException, KeyError, ValueError):
            return False

    @property
    def cdp_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


# ------------------------------------------------------------------ fixtures (import them into a test module)

import pytest  # noqa: E402

SITE = "site.test"  # "on the internet": netguard is told it is public, Chromium sends it to 127.0.0.1
OTHER_SITE = "other.test"  # another site on the internet (a cross-site frame runs in a process of its own)
INTRANET = "intranet.test"  # "inside the deployment": resolves to 10.20.30.40, Chromium sends it to 127.0.0.1
PUBLIC_IP = "93.184.216.34"
PRIVATE_IP = "10.20.30.40"


@pytest.fixture(scope="module")
def chromium():
    browser = Chromium(host_rules=f"MAP {SITE} 127.0.0.1, MAP {OTHER_SITE} 127.0.0.1, MAP {INTRANET} 127.0.0.1").start()
    yield browser
    browser.stop()


@pytest.fixture
def site():
    pages = WebPages().start()
    yield pages
    pages.stop()


@pytest.fixture
def internal():
    pages = WebPages().start()
    yield pages
    pages.stop()


@pytest.fixture
def browser_env(settings, monkeypatch, chromium):
    """The operator allows the test's Chromium; netguard resolves the two test names as the world would."""
    from agenticos import netguard

    settings.BROWSER_CDP_ALLOWED_HOSTS = ["127.0.0.1"]
    # The room a slow host's operator would give it: the bound of a wait that ends when Chromium answers (a
    # refused connection still fails at once).
    settings.BROWSER_CONNECT_TIMEOUT_SECONDS = STARTUP_SECONDS
    # The operator opened the test's internal names (BROWSER_ALLOWED_PRIVATE_HOSTS) for the agents whose
    # allowed_domains name them; an agent that does not name one still never reaches it.
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = [INTRANET, "localhost"]
    real = netguard.resolve

    async def resolve(hostname: str) -> list[str]:
        return {SITE: [PUBLIC_IP], OTHER_SITE: [PUBLIC_IP], INTRANET: [PRIVATE_IP]}.get(hostname) or await real(hostname)

    monkeypatch.setattr(netguard, "resolve", resolve)
    return chromium
