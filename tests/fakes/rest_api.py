"""A local fake of a customer's REST API (stdlib ThreadingHTTPServer in a thread), speaking real HTTP.

Auth families (each checks the credential the way a real provider would):
  /auth/bearer   Authorization: Bearer <secret>
  /auth/apikey   X-API-Key: <secret>
  /auth/query    ?api_key=<secret>
  /auth/hmac     X-Timestamp + X-Signature = hex HMAC-SHA256(secret, "ts\\nMETHOD\\npath?query\\n" + body)
  /auth/jwt      Authorization: Bearer <HS256 JWT signed with secret, with exp>
Other endpoints: /echo (method, path, query, headers, json body), /contacts (list with ?page= pagination,
POST create, GET/PATCH/DELETE /contacts/{id}), /jobs (POST → 202 job id, GET /jobs/{id}), /big?kb=N,
/status/{code}, /slow?secs=S (&once=1: only the first request of that method and URL waits), /badjson, /redirect?to=URL, /page.html, /doc.md, /data.json, /image.png,
/blob.bin, /doc.pdf. Every request is recorded in `server.requests`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import jwt

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeState:
    secret: str
    requests: list[Recorded] = field(default_factory=list)
    contacts: dict[int, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[int, int] = field(default_factory=dict)
    waited: set[str] = field(default_factory=set)  # /slow?once=1 requests that have waited
    pdf: bytes = b""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(state: FakeState):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet
            return

        def _send(self, status: int, payload: Any = None, *, ctype: str = "application/json",
                  raw: bytes | None = None, headers: dict[str, str] | None = None) -> None:
            data = raw if raw is not None else (json.dumps(payload).encode() if payload is not None else b"")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            parsed = urlparse(self.path)
            query = parse_qs(parsed.query)
            with state.lock:
                state.requests.append(Recorded(self.command, parsed.path, query, dict(self.headers.items()), body))
            path = parsed.path.rstrip("/") or "/"
            try:
                self._route(path, query, body, parsed)
            except BrokenPipeError:
                pass

        def _authorized(self, path: str, query, body: bytes, parsed) -> bool:
            secret = state.secret
            if path == "/auth/bearer":
                return self.headers.get("Authorization") == f"Bearer {secret}"
            if path == "/auth/apikey":
                return self.headers.get("X-API-Key") == secret
            if path == "/auth/query":
                return query.get("api_key") == [secret]
            if path == "/auth/hmac":
                stamp = self.headers.get("X-Timestamp", "")
                target = parsed.path + (f"?{parsed.query}" if parsed.query else "")
                message = f"{stamp}\n{self.command}\n{target}\n".encode() + body
                expected = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
                return hmac.compare_digest(self.headers.get("X-Signature", ""), expected)
            if path == "/auth/jwt":
                header = self.headers.get("Authorization", "")
                if not header.startswith("Bearer "):
                    return False
                try:
                    jwt.decode(header[7:], secret, algorithms=["HS256"], options={"require": ["exp"]})
                except jwt.PyJWTError:
                    return False
                return True
            return True

        def _route(self, path: str, query, body: bytes, parsed) -> None:  # noqa: C901
            if path.startswith("/auth/"):
                if not self._authorized(path, query, body, parsed):
                    self._send(401, {"error": "unauthorized"})
                    return
                self._send(200, {"ok": True, "family": path.split("/")[-1],
                                 "echo_headers": dict(self.headers.items()), "echo_query": query})
                return
            if path.startswith("/search/"):
                self._search(path, query, body)
                return
            if path == "/echo" or path.startswith("/echo/"):
                try:
                    parsed_body = json.loads(body) if body else None
                except ValueError:
                    parsed_body = body.decode(errors="replace")
                self._send(200, {"method": self.command, "path": parsed.path, "query": query,
                                 "headers": dict(self.headers.items()), "json": parsed_body})
                return
            if path == "/contacts" and self.command == "GET":
                page = int((query.get("page") or ["1"])[0])
                items = sorted(state.contacts.values(), key=lambda c: c["id"])
                chunk = items[(page - 1) * 2: page * 2]
                more = len(items) > page * 2
                self._send(200, {"results": chunk, "paging": {"next": page + 1} if more else None})
                return
            if path == "/contacts" and self.command == "POST":
                data = json.loads(body or b"{}")
                props = data.get("properties") or {}
                if not props.get("email"):
                    self._send(422, {"error": "properties.email is required"})
                    return
                with state.lock:
                    new_id = len(state.contacts) + 1
                    state.contacts[new_id] = {"id": new_id, **props}
                self._send(201, state.contacts[new_id])
                return
            if path.startswith("/contacts/"):
                try:
                    cid = int(path.split("/")[-1])
                except ValueError:
                    self._send(400, {"error": "bad id"})
                    return
                contact = state.contacts.get(cid)
                if contact is None:
                    self._send(404, {"error": "no such contact"})
                    return
                if self.command == "PATCH":
                    contact.update(json.loads(body or b"{}").get("properties") or {})
                if self.command == "DELETE":
                    state.contacts.pop(cid)
                    self._send(204, raw=b"")
                    return
                self._send(200, contact)
                return
            if path == "/jobs" and self.command == "POST":
                with state.lock:
                    job = len(state.jobs) + 1
                    state.jobs[job] = 0
                self._send(202, {"job_id": job, "status": "queued"})
                return
            if path.startswith("/jobs/"):
                job = int(path.split("/")[-1])
                polls = state.jobs.get(job, 0) + 1
                state.jobs[job] = polls
                self._send(200, {"job_id": job, "status": "done" if polls >= 2 else "running",
                                 "result": {"rows": 3} if polls >= 2 else None})
                return
            if path == "/big":
                kb = int((query.get("kb") or ["100"])[0])
                rows = [{"i": i, "text": "x" * 90} for i in range(kb * 10)]
                self._send(200, {"rows": rows})
                return
            if path.startswith("/status/"):
                code = int(path.split("/")[-1])
                self._send(code, {"error": f"status {code}"})
                return
            if path == "/slow":
                key = f"{self.command} {self.path}"
                with state.lock:
                    wait = not (query.get("once") and key in state.waited)
                    state.waited.add(key)
                if wait:
                    time.sleep(float((query.get("secs") or ["2"])[0]))
                self._send(200, {"slow": True})
                return
            if path == "/badjson":
                self._send(200, raw=b'{"broken": ', ctype="application/json")
                return
            if path == "/redirect":
                self._send(302, raw=b"", headers={"Location": query["to"][0]})
                return
            if path == "/page.html":
                html = ("<html><head><title>Fake Docs</title></head><body><h1>Contacts API</h1>"
                        "<p>POST /contacts creates a contact. Field <code>properties.email</code> is required.</p>"
                        + "<p>filler paragraph</p>" * int((query.get("n") or ["1"])[0]) + "</body></html>")
                self._send(200, raw=html.encode(), ctype="text/html; charset=utf-8")
                return
            if path == "/doc.md":
                self._send(200, raw=b"# Title\n\nSome *markdown*.", ctype="text/markdown")
                return
            if path == "/data.json":
                self._send(200, {"a": 1, "b": [1, 2]})
                return
            if path == "/image.png":
                self._send(200, raw=PNG_1x1, ctype="image/png")
                return
            if path == "/blob.bin":
                self._send(200, raw=bytes(range(256)) * 4, ctype="application/zip")
                return
            if path == "/doc.pdf":
                self._send(200, raw=state.pdf, ctype="application/pdf")
                return
            if path == "/brotli":
                self._send(200, raw=b"\x1b\x00", ctype="text/plain", headers={"Content-Encoding": "br"})
                return
            self._send(404, {"error": "not found"})

        def _search(self, path: str, query, body: bytes) -> None:
            """Paid web-search providers, each with its own auth header and response shape."""
            secret = state.secret
            data = json.loads(body) if body else {}
            hits = [{"title": f"Result {i}", "url": f"https://example.com/{i}", "text": f"Snippet {i}"}
                    for i in range(1, 11)]
            if path == "/search/tavily":
                if self.headers.get("Authorization") != f"Bearer {secret}":
                    self._send(401, {"detail": "bad key"})
                    return
                n = int(data.get("max_results", 5))
                self._send(200, {"query": data.get("query"), "results": [
                    {"title": h["title"], "url": h["url"], "content": h["text"], "score": 0.9} for h in hits[:n]]})
            elif path == "/search/brave":
                if self.headers.get("X-Subscription-Token") != secret:
                    self._send(401, {"error": "bad token"})
                    return
                n = int((query.get("count") or ["5"])[0])
                self._send(200, {"web": {"results": [
                    {"title": h["title"], "url": h["url"], "description": h["text"]} for h in hits[:n]]}})
            elif path == "/search/exa":
                if self.headers.get("x-api-key") != secret:
                    self._send(401, {"error": "bad key"})
                    return
                n = int(data.get("numResults", 5))
                self._send(200, {"results": [{"title": h["title"], "url": h["url"], "text": h["text"]}
                                             for h in hits[:n]]})
            else:
                self._send(404, {"error": "not found"})

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

    return Handler


class FakeRestAPI:
    def __init__(self, secret: str = "sk-fake-provider-secret-1234567890abcdef"):
        self.state = FakeState(secret=secret)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def secret(self) -> str:
        return self.state.secret

    @property
    def requests(self) -> list[Recorded]:
        return self.state.requests

    def start(self) -> FakeRestAPI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
