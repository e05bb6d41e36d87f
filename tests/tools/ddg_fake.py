"""A local stand-in for DuckDuckGo's HTML endpoint (POST /html/, form fields q, b, l), answering in the
markup html.duckduckgo.com serves: one `div.result__body` per result (title in `h2 > a.result__a`, the
snippet in `a.result__snippet`), an ad whose link goes through duckduckgo.com/y.js first.

`mode`: "results" (default), "none" (a page without results), "ratelimit" (DuckDuckGo's 202 with an
empty body). Every form it receives is recorded in `forms`.
"""

from __future__ import annotations

import html
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

_RESULT = """
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a" href="{href}">{title}</a></h2>
    <div class="result__extras"><span class="result__url">{href}</span></div>
    <a class="result__snippet" href="{href}">{snippet}</a>
  </div>
</div>"""
_AD = _RESULT.format(href="https://duckduckgo.com/y.js?ad_domain=ads.example&u3=x", title="Sponsored thing",
                     snippet="Buy it now")


def results_page(query: str) -> str:
    items = [_AD] + [
        _RESULT.format(href=f"https://docs.example.org/{query.replace(' ', '-')}/{i}",
                       title=f"{html.escape(query)} — page {i}", snippet=f"About <b>{html.escape(query)}</b>, part {i}.")
        for i in range(1, 6)
    ]
    return f"<html><body><div id=\"links\" class=\"results\">{''.join(items)}</div></body></html>"


class FakeDuckDuckGo:
    def __init__(self) -> None:
        self.mode = "results"
        self.forms: list[dict[str, list[str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args):  # quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
                form = parse_qs(body, keep_blank_values=True)
                outer.forms.append(form)
                if self.path != "/html/" or outer.mode == "ratelimit":
                    self.send_response(202 if self.path == "/html/" else 404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                query = (form.get("q") or [""])[0]
                page = results_page(query) if outer.mode == "results" else "<html><body>No results.</body></html>"
                data = page.encode()
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=UTF-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/html/"

    def start(self) -> FakeDuckDuckGo:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
