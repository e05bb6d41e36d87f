"""A local SIEM webhook receiver (stdlib ThreadingHTTPServer in a thread): it checks each POST's
`X-AgenticOS-Signature` with the secret it was given (as a collector would), keeps the events of the valid ones by
id (a copy sent twice is kept once), and can be "down" (answers 503) to make a backlog."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.ports import listening_socket


@dataclass
class SiemReceiver:
    secret: str = ""
    down: bool = False
    posts: list[dict[str, Any]] = field(default_factory=list)  # every POST: headers, whether its signature held
    events: dict[int, dict[str, Any]] = field(default_factory=dict)

    def start(self) -> SiemReceiver:
        sock = listening_socket()
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/agenticos"
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self), bind_and_activate=False)
        server.socket.close()
        server.socket = sock
        server.daemon_threads = True
        self.server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def valid(self, header: str, body: bytes) -> bool:
        parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
        expected = hmac.new(self.secret.encode(), f"{parts.get('t', '')}.".encode() + body, hashlib.sha256).hexdigest()
        return bool(self.secret) and hmac.compare_digest(expected, parts.get("v1", ""))


def _handler(receiver: SiemReceiver):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            valid = receiver.valid(self.headers.get("X-AgenticOS-Signature", ""), body)
            receiver.posts.append({"valid": valid, "delivery": self.headers.get("X-AgenticOS-Delivery"),
                                   "body": body})
            status = 503 if receiver.down else (204 if valid else 401)
            if status == 204:
                for event in json.loads(body)["events"]:
                    receiver.events[event["id"]] = event
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler
