"""A local syslog collector over TCP, with TLS (RFC 5425) or plain (RFC 6587): it reads octet-counted frames, parses
each RFC 5424 message (header, the `agenticos@32473` structured data, the BOM-prefixed JSON), checks its `sig` with
the secret it was given (as a collector rule would), and keeps the valid events by id (a copy sent twice is kept
once). `down()` closes the listening socket (a connection is refused), `up()` listens on the same port again.

`ca_file` is the PEM to trust (AUDIT_STREAM_CA_BUNDLE); the certificate names `localhost` and 127.0.0.1."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import socket
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.mem0_server import _self_signed
from tests.fakes.ports import listening_socket

# <PRI>VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP STRUCTURED-DATA [SP MSG]
_HEADER = re.compile(rb"^<(\d{1,3})>1 (\S+) (\S+) (\S+) (\S+) (\S+) ")
_SD_PARAM = re.compile(r'(\w+)="((?:[^"\\\]]|\\.)*)"')
BOM = b"\xef\xbb\xbf"


@dataclass
class SyslogReceiver:
    tls: bool = True
    secret: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)  # every message: header fields, sd, valid
    events: dict[int, dict[str, Any]] = field(default_factory=dict)
    handshakes_failed: int = 0
    connections: int = 0  # served to their end (read, parsed, kept)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, condition: Any, timeout: float = 10) -> bool:
        """Wait (bounded) until `condition(self)` holds: a connection is served on the receiver's own thread, after
        the sender has already returned."""
        with self._changed:
            return self._changed.wait_for(lambda: condition(self), timeout=timeout)

    def start(self) -> SyslogReceiver:
        self._folder = Path(tempfile.mkdtemp(prefix="fake-syslog-"))
        cert, key = _self_signed(self._folder)
        self.ca_file = str(cert)
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(str(cert), str(key))
        self._listen(listening_socket())
        self.port = self._sock.getsockname()[1]
        self.url = f"syslog+{'tls' if self.tls else 'tcp'}://127.0.0.1:{self.port}"
        return self

    def _listen(self, sock: socket.socket) -> None:
        self._sock = sock
        threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def down(self) -> None:
        self._close()

    def _close(self) -> None:
        # A thread blocked in accept() holds the socket: close() alone leaves it listening (Linux). shutdown()
        # stops the listening and wakes the accept.
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def up(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen()
        self._listen(sock)

    def stop(self) -> None:
        self._close()

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return  # closed: down() or stop()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls:
                try:
                    conn = self._context.wrap_socket(conn, server_side=True)
                except (ssl.SSLError, OSError):
                    with self._changed:
                        self.handshakes_failed += 1
                    return
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
            for payload in _octet_counted(data):
                self._keep(payload)
        except OSError:
            return
        finally:
            conn.close()
            with self._changed:
                self.connections += 1
                self._changed.notify_all()

    def _keep(self, payload: bytes) -> None:
        header = _HEADER.match(payload)
        assert header is not None, payload[:200]
        rest = payload[header.end():]
        assert rest.startswith(b"["), rest[:200]
        sd_end = _sd_end(rest)
        sd_text = rest[1:sd_end].decode("utf-8")
        sd_id, _, params = sd_text.partition(" ")
        sd = {k: re.sub(r"\\(.)", r"\1", v) for k, v in _SD_PARAM.findall(params)}
        msg = rest[sd_end + 1:].removeprefix(b" ")
        assert msg.startswith(BOM), msg[:20]
        body = msg[len(BOM):].decode("utf-8")
        expected = hmac.new(self.secret.encode(), f"{sd.get('id')}.{body}".encode(), hashlib.sha256).hexdigest()
        valid = bool(self.secret) and hmac.compare_digest(expected, sd.get("sig", ""))
        pri = int(header.group(1))
        record = {"facility": pri // 8, "severity": pri % 8, "timestamp": header.group(2).decode(),
                  "hostname": header.group(3).decode(), "app": header.group(4).decode(),
                  "msgid": header.group(6).decode(), "sd_id": sd_id, "sd": sd, "valid": valid,
                  "event": json.loads(body)}
        self.messages.append(record)
        if valid:
            self.events.setdefault(int(sd["id"]), record["event"])


def _sd_end(rest: bytes) -> int:
    """The index of the `]` closing the first SD-ELEMENT (escaped `\\]` inside values skipped)."""
    i, quoted = 1, False
    while i < len(rest):
        ch = rest[i:i + 1]
        if ch == b"\\":
            i += 2
            continue
        if ch == b'"':
            quoted = not quoted
        elif ch == b"]" and not quoted:
            return i
        i += 1
    raise AssertionError("no end to the structured data")


def _octet_counted(data: bytes) -> list[bytes]:
    frames = []
    while data:
        length, space, data = data.partition(b" ")
        assert space and length.isdigit(), data[:50]
        frames.append(data[:int(length)])
        data = data[int(length):]
    return frames
