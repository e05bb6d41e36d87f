"""A local fake of Daytona's REST API (stdlib ThreadingHTTPServer in a thread), speaking real HTTP.

What workspaces/daytona.py uses, under /api: POST/GET /sandbox (labels filter), GET/DELETE
/sandbox/{id}, POST /sandbox/{id}/start, GET /snapshots, GET /sandbox/{id}/toolbox-proxy-url (→ this server's
/toolbox-proxy, where the sandbox's toolbox is /toolbox-proxy/{id}/…; `legacy=True` answers it 404 like an
older server, whose toolbox is /api/toolbox/{id}/toolbox/…), and on the toolbox:
process/execute ({command, cwd, timeout} → {exitCode, result}, the argv run without a shell, stdout and
stderr combined, as Daytona does), files/upload (multipart `file`), files/download, files (DELETE),
files/folder. A sandbox's /home/daytona is a temporary directory here; commands run as this process's user
(a fake of the outside world, not an isolation test). Every request needs `Authorization: Bearer <token>`
and is recorded in `requests` (method, path, headers, body).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

HOME = "/home/daytona"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class Sandbox:
    id: str
    root: Path
    labels: dict[str, str]
    snapshot: str
    state: str = "started"

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "labels": self.labels, "snapshot": self.snapshot, "state": self.state,
                "memory": 1, "cpu": 1}


@dataclass
class FakeState:
    token: str
    base: Path
    sandboxes: dict[str, Sandbox] = field(default_factory=dict)
    snapshots: list[dict[str, str]] = field(default_factory=lambda: [
        {"name": "daytona-small", "imageName": "daytonaio/sandbox:0.4", "state": "active"},
        {"name": "python-data", "imageName": "python:3.12-slim", "state": "active"},
        {"name": "half-built", "imageName": "node:22", "state": "building"}])
    requests: list[Recorded] = field(default_factory=list)
    legacy: bool = False
    proxy: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(state: FakeState):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet
            return

        def _send(self, status: int, body: Any = None, *, raw: bytes | None = None) -> None:
            data = raw if raw is not None else json.dumps(body if body is not None else {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"statusCode": status, "message": message, "error": self.responses[status][0]})

        def _handle(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = urlparse(self.path)
            query = parse_qs(url.query)
            with state.lock:
                state.requests.append(Recorded(method, url.path, query, dict(self.headers.items()), body))
            if self.headers.get("Authorization") != f"Bearer {state.token}":
                return self._error(401, "Invalid API key")
            parts = url.path.removeprefix("/api/").strip("/").split("/")
            if parts[0] == "toolbox-proxy" and len(parts) >= 3 and not state.legacy:
                parts = ["toolbox", parts[1], "toolbox", *parts[2:]]  # the same toolbox, the current route
            elif parts[0] == "toolbox" and url.path.startswith("/api/") and not state.legacy:
                return self._error(404, "Use the toolbox proxy")
            elif parts[0] == "toolbox-proxy":
                return self._error(404, f"Cannot {method} {url.path}")
            try:
                if parts[0] == "snapshots" and method == "GET":
                    return self._send(200, {"items": state.snapshots, "total": len(state.snapshots)})
                if parts[0] == "sandbox":
                    return self._sandbox(method, parts[1:], query, body)
                if parts[0] == "toolbox" and len(parts) >= 4 and parts[2] == "toolbox":
                    sandbox = state.sandboxes.get(parts[1])
                    if sandbox is None:
                        return self._error(404, "Sandbox not found")
                    if sandbox.state != "started":
                        return self._error(400, "Sandbox is not started")
                    return self._toolbox(sandbox, method, parts[3:], query, body)
            except FileNotFoundError:
                return self._error(404, "File not found")
            return self._error(404, f"Cannot {method} {url.path}")

        def _sandbox(self, method: str, rest: list[str], query: dict[str, list[str]], body: bytes) -> None:
            if not rest:
                if method == "POST":
                    data = json.loads(body or b"{}")
                    snapshot = data.get("snapshot") or "daytona-small"
                    if snapshot not in {s["name"] for s in state.snapshots if s["state"] == "active"}:
                        return self._error(400, f"Snapshot {snapshot} not found")
                    sandbox_id = str(uuid.uuid4())
                    root = state.base / sandbox_id
                    root.mkdir()
                    sandbox = Sandbox(sandbox_id, root, dict(data.get("labels") or {}), snapshot)
                    state.sandboxes[sandbox_id] = sandbox
                    return self._send(200, sandbox.json())
                wanted = json.loads(query.get("labels", ["{}"])[0])
                return self._send(200, [s.json() for s in state.sandboxes.values()
                                        if all(s.labels.get(k) == v for k, v in wanted.items())])
            sandbox = state.sandboxes.get(rest[0])
            if sandbox is None:
                return self._error(404, "Sandbox not found")
            if method == "GET" and len(rest) == 1:
                return self._send(200, sandbox.json())
            if method == "DELETE" and len(rest) == 1:
                del state.sandboxes[sandbox.id]
                shutil.rmtree(sandbox.root, ignore_errors=True)
                return self._send(200, {})
            if method == "GET" and rest[1:] == ["toolbox-proxy-url"]:
                if state.legacy:
                    return self._error(404, f"Cannot GET /api/sandbox/{sandbox.id}/toolbox-proxy-url")
                return self._send(200, {"url": state.proxy})
            if method == "POST" and rest[1:] == ["start"]:
                sandbox.state = "started"
                return self._send(200, sandbox.json())
            return self._error(404, "Not found")

        def _local(self, sandbox: Sandbox, path: str) -> Path:
            if not path.startswith(HOME + "/") and path != HOME:
                raise FileNotFoundError(path)
            local = (sandbox.root / path[len(HOME):].lstrip("/")).resolve()
            if local != sandbox.root.resolve() and sandbox.root.resolve() not in local.parents:
                raise FileNotFoundError(path)
            return local

        def _toolbox(self, sandbox: Sandbox, method: str, rest: list[str], query: dict[str, list[str]],
                     body: bytes) -> None:
            where = query.get("path", [""])[0]
            if rest == ["process", "execute"] and method == "POST":
                data = json.loads(body or b"{}")
                cwd = self._local(sandbox, data.get("cwd") or HOME)
                try:
                    done = subprocess.run(shlex.split(data["command"]), cwd=cwd,  # noqa: S603
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          timeout=float(data.get("timeout") or 360), check=False,
                                          env={"PATH": "/usr/bin:/bin", "HOME": str(sandbox.root)})
                except subprocess.TimeoutExpired:
                    return self._error(408, "Command timed out")
                return self._send(200, {"exitCode": done.returncode, "result": done.stdout.decode("utf-8", "replace")})
            if rest == ["files", "download"] and method == "GET":
                return self._send(200, raw=self._local(sandbox, where).read_bytes())
            if rest == ["files", "folder"] and method == "POST":
                self._local(sandbox, where).mkdir(parents=True, exist_ok=True)
                return self._send(200, {})
            if rest == ["files", "upload"] and method == "POST":
                message = BytesParser(policy=HTTP).parsebytes(
                    f"Content-Type: {self.headers.get('Content-Type')}\r\n\r\n".encode() + body)
                part = next((p for p in message.iter_parts() if p.get_param("name", header="content-disposition")
                             == "file"), None)
                if part is None:
                    return self._error(400, "No file")
                target = self._local(sandbox, where)
                if not target.parent.is_dir():
                    return self._error(400, "Parent directory does not exist")
                target.write_bytes(part.get_payload(decode=True) or b"")
                return self._send(200, {})
            if rest == ["files"] and method == "DELETE":
                self._local(sandbox, where).unlink()
                return self._send(200, {})
            return self._error(404, "Not found")

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

        def do_DELETE(self):
            self._handle("DELETE")

    return Handler


class FakeDaytona:
    def __init__(self, token: str = "dtn_fake_daytona_key_0123456789abcdef", *, legacy: bool = False) -> None:
        self.state = FakeState(token=token, base=Path(tempfile.mkdtemp(prefix="fake-daytona-")), legacy=legacy)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self.state.proxy = f"http://127.0.0.1:{self.server.server_address[1]}/toolbox-proxy"
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api"

    @property
    def token(self) -> str:
        return self.state.token

    @property
    def requests(self) -> list[Recorded]:
        return self.state.requests

    @property
    def sandboxes(self) -> dict[str, Sandbox]:
        return self.state.sandboxes

    def start(self) -> FakeDaytona:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.state.base, ignore_errors=True)
