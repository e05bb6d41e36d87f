"""A local fake of Slack Socket Mode on top of the fake Web API (same host and port, real HTTP + WebSocket).

Slack's side of the protocol, as the real service plays it:
- `apps.connections.open` answers only an app-level token (`xapp-…` in `app_tokens`; a bot token gets
  `not_allowed_token_type`, anything else `invalid_auth`) with a `ws://…/link/?ticket=…` URL whose ticket
  works once;
- a connection on that URL is greeted with `hello`;
- `send_event(...)` wraps an event callback in an `events_api` envelope with a fresh `envelope_id`; the client
  must answer `{"envelope_id": …}` (recorded in `acks`); `redeliver(...)` sends the same payload again under
  a new envelope id with `retry_attempt` raised, as Slack does when an ack is late;
- `drop_after_hello = n`: the next n connections close right after `hello` (a dropped socket, no envelope);
- `disconnect(reason)` sends a `disconnect` envelope (Slack's "refresh_requested" / "warning") and closes the
  socket a little later: the client is expected to open a new connection through apps.connections.open.

Recorded: `connections` (how many sockets were opened), `acks`, `tickets_used`, plus everything `FakeSlack`
records (posts, calls).
"""

from __future__ import annotations

import itertools
import json
import queue
import secrets
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from websockets.server import ServerProtocol

from tests.fakes.slack_api import FakeSlack

APP_TOKEN = "xapp-1-A0TEST-0001-socketmode"
CLOSE = object()  # queued after a disconnect envelope: close the socket once the envelope is out


class FakeSlackSocket(FakeSlack):
    def __init__(self, *args: Any, app_tokens: tuple[str, ...] = (APP_TOKEN,), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.app_tokens = set(app_tokens)
        self.tickets: set[str] = set()
        self.tickets_used: list[str] = []
        self.acks: list[str] = []
        self.connections = 0
        self.drop_after_hello = 0  # how many next connections close right after hello, with no disconnect
        self.streams: list[queue.Queue] = []
        self.connected = threading.Condition(self.lock)
        self._envelopes = itertools.count(1)

    # ------------------------------------------------------------------ Web API

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, bytes]:
        if urlsplit(path).path != "/api/apps.connections.open":
            return super().handle(method, path, headers, body)
        params = self.params(path, headers, body)
        token = headers.get("authorization", "").removeprefix("Bearer ").strip() or str(params.get("token") or "")
        with self.lock:
            self.calls.append(("apps.connections.open", {k: v for k, v in params.items() if k != "token"}))
        if token in self.tokens:
            return self.json_reply({"ok": False, "error": "not_allowed_token_type"})
        if token not in self.app_tokens:
            return self.json_reply({"ok": False, "error": "invalid_auth"})
        ticket = secrets.token_hex(8)
        with self.lock:
            self.tickets.add(ticket)
        host = self.url.removeprefix("http://")
        return self.json_reply({"ok": True, "url": f"ws://{host}/link/?ticket={ticket}&app_id=A0TEST"})

    # ------------------------------------------------------------------ Socket Mode

    def wait_connections(self, count: int, timeout: float = 15.0) -> bool:
        with self.connected:
            return self.connected.wait_for(lambda: self.connections >= count and len(self.streams) > 0, timeout)

    def _broadcast(self, item: Any) -> None:
        with self.lock:
            for stream in self.streams:
                stream.put(item)

    def envelope(self, payload: dict[str, Any], *, retry_attempt: int = 0) -> dict[str, Any]:
        return {
            "envelope_id": f"env-{next(self._envelopes):04d}-{secrets.token_hex(4)}",
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
            "payload": payload,
        }

    def send_event(self, payload: dict[str, Any], *, retry_attempt: int = 0) -> str:
        """Push one event callback (as the Events API would POST it) to every open socket; its envelope id."""
        envelope = self.envelope(payload, retry_attempt=retry_attempt)
        self._broadcast(json.dumps(envelope))
        return envelope["envelope_id"]

    def redeliver(self, payload: dict[str, Any]) -> str:
        return self.send_event(payload, retry_attempt=1)

    def disconnect(self, reason: str = "refresh_requested") -> None:
        self._broadcast(json.dumps({"type": "disconnect", "reason": reason,
                                    "debug_info": {"host": "applink-fake"}}))
        self._broadcast(CLOSE)

    def acked(self, envelope_id: str) -> bool:
        with self.lock:
            return envelope_id in self.acks

    def serve_websocket(self, handler) -> None:
        ticket = (parse_qs(urlsplit(handler.path).query).get("ticket") or [""])[0]
        protocol = ServerProtocol()
        raw = (handler.requestline + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in handler.headers.items())
               + "\r\n").encode()
        protocol.receive_data(raw)
        request = protocol.events_received()[0]
        sock: socket.socket = handler.connection
        with self.lock:
            valid = ticket in self.tickets
            self.tickets.discard(ticket)  # a ticket opens one connection
            if valid:
                self.tickets_used.append(ticket)
        if not valid:
            protocol.send_response(protocol.reject(401, "invalid ticket"))
            for chunk in protocol.data_to_send():
                sock.sendall(chunk)
            return
        protocol.send_response(protocol.accept(request))
        for chunk in protocol.data_to_send():
            sock.sendall(chunk)
        outbox: queue.Queue = queue.Queue()
        outbox.put(json.dumps({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0TEST"},
                               "debug_info": {"host": "applink-fake", "approximate_connection_time": 18060}}))
        with self.connected:
            if self.drop_after_hello > 0:
                self.drop_after_hello -= 1
                outbox.put(CLOSE)
            self.streams.append(outbox)
            self.connections += 1
            self.connected.notify_all()
        sock.settimeout(0.1)
        try:
            self._pump(protocol, sock, outbox)
        except OSError:
            return
        finally:
            with self.lock:
                self.streams.remove(outbox)

    def _pump(self, protocol: ServerProtocol, sock: socket.socket, outbox: queue.Queue) -> None:
        while True:
            try:
                while True:
                    item = outbox.get_nowait()
                    if item is CLOSE:
                        protocol.send_close(1000, "disconnect")
                        for chunk in protocol.data_to_send():
                            sock.sendall(chunk)
                        return
                    protocol.send_text(item.encode())
            except queue.Empty:
                pass
            for chunk in protocol.data_to_send():
                sock.sendall(chunk)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            if not data:
                return
            protocol.receive_data(data)
            for frame in protocol.events_received():
                try:
                    message = json.loads(getattr(frame, "data", b""))
                except (ValueError, TypeError):
                    continue
                if isinstance(message, dict) and message.get("envelope_id"):
                    with self.lock:
                        self.acks.append(str(message["envelope_id"]))
            for chunk in protocol.data_to_send():
                sock.sendall(chunk)
            if protocol.state.name == "CLOSED" or protocol.close_expected():
                return  # the server closes TCP after the closing handshake, as RFC 6455 asks


def start_fake_slack_socket(**kwargs: Any) -> FakeSlackSocket:
    fake = FakeSlackSocket(**kwargs)
    handler_class = fake.server.RequestHandlerClass
    original = handler_class.do_GET

    def do_GET(self) -> None:  # noqa: N802
        if urlsplit(self.path).path.startswith("/link") and "upgrade" in self.headers.get("Connection", "").lower():
            self.close_connection = True
            fake.serve_websocket(self)
            return
        original(self)

    handler_class.do_GET = do_GET
    return fake.start()


@pytest.fixture
def fake_slack_socket() -> Iterator[FakeSlackSocket]:
    fake = start_fake_slack_socket()
    try:
        yield fake
    finally:
        fake.stop()
