"""A local fake of the mem0 REST API, over real HTTPS (a self-signed certificate made per server).

Routes (the ones `knowledge.mem0.Mem0Client` uses):
- `POST /v1/memories/` `{messages: [{role, content}], user_id}` → stores each message as a memory.
- `POST /v1/memories/search/` `{query, user_id, limit}` → that user's memories sharing a word with the
  query, most shared words first, as `{"results": [{id, memory, score, user_id}]}`.
- `DELETE /v1/memories/?user_id=…` → deletes that user's memories.

`Authorization: Token <api_key>` is required (401 otherwise). Every request is recorded (`requests`).
`ca_file` is the PEM to trust (set `MEM0_CA_BUNDLE` to it); the certificate names `localhost` and 127.0.0.1.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import itertools
import json
import re
import shutil
import ssl
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest


def _self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        fake: FakeMem0Server = self.server.fake
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        fake.requests.append({"method": method, "path": parts.path, "query": parse_qs(parts.query),
                              "headers": {k.lower(): v for k, v in self.headers.items()}, "json": body})
        if self.headers.get("Authorization") != f"Token {fake.api_key}":
            self._reply(401, {"detail": "Invalid API key"})
            return
        if method == "POST" and parts.path == "/v1/memories/":
            out = []
            for message in body.get("messages", []):
                memory = {"id": str(next(fake.ids)), "memory": message["content"], "user_id": body["user_id"]}
                fake.memories.append(memory)
                out.append({"id": memory["id"], "event": "ADD", "data": {"memory": memory["memory"]}})
            self._reply(200, out)
        elif method == "POST" and parts.path == "/v1/memories/search/":
            query = _words(body.get("query", ""))
            scored = []
            for memory in fake.memories:
                if memory["user_id"] == body.get("user_id"):
                    shared = len(query & _words(memory["memory"]))
                    if shared:
                        scored.append({**memory, "score": shared / max(1, len(query))})
            scored.sort(key=lambda m: -m["score"])
            self._reply(200, {"results": scored[: int(body.get("limit") or 10)]})
        elif method == "DELETE" and parts.path == "/v1/memories/":
            user_id = parse_qs(parts.query).get("user_id", [""])[0]
            fake.memories[:] = [m for m in fake.memories if m["user_id"] != user_id]
            self._reply(200, {"message": "Memories deleted successfully!"})
        else:
            self._reply(404, {"detail": "Not found"})

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")


class FakeMem0Server:
    def __init__(self, api_key: str = "m0-test-key"):
        self.api_key = api_key
        self.memories: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.ids = itertools.count(1)
        self._folder = Path(tempfile.mkdtemp(prefix="fake-mem0-"))
        cert, key = _self_signed(self._folder)
        self.ca_file = str(cert)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self  # type: ignore[attr-defined]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"https://localhost:{self._httpd.server_address[1]}"

    def start(self) -> FakeMem0Server:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        shutil.rmtree(self._folder, ignore_errors=True)  # its certificate and key

    def __enter__(self) -> FakeMem0Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@pytest.fixture
def fake_mem0(settings) -> Iterator[FakeMem0Server]:
    """A started fake mem0 over HTTPS, trusted through MEM0_CA_BUNDLE and allowed in MEM0_ALLOWED_HOSTS."""
    with FakeMem0Server() as server:
        settings.MEM0_CA_BUNDLE = server.ca_file
        settings.MEM0_ALLOWED_HOSTS = ["localhost"]
        yield server
