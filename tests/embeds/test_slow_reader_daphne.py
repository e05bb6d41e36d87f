"""Under daphne — the server `make run` and docker-compose start — a visitor whose client stops reading is
dropped once EMBED_SLOW_READER_SECONDS pass without it answering the socket's ping, while a client that
reads (and so answers pings) stays connected however quiet it is. (A close frame with 1011 could not reach
a client that does not read; through the bare ASGI app the consumer's own send timeout sends it — see
test_socket_turns.py.)"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import time
from urllib.parse import urlsplit

import pytest
import websockets

from tests.embeds.conftest import SHOP, serving_daphne

pytestmark = [pytest.mark.django_db(transaction=True)]

SLOW_READER_SECONDS = 3  # daphne pings after 1 s of silence and drops the client 2 s later


def handshake(base: str, key: str) -> socket.socket:
    address = urlsplit(base)
    sock = socket.create_connection((address.hostname, address.port), timeout=10)
    nonce = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((
        f"GET /api/v1/embed/{key}/ws HTTP/1.1\r\nHost: {address.netloc}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\nOrigin: {SHOP}\r\n\r\n"
    ).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.split(b"\r\n")[0].split(b" ")[1] == b"101", head
    return sock


def closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_client_that_stops_reading_is_dropped_and_one_that_reads_is_not(widget):
    with serving_daphne(slow_reader_seconds=SLOW_READER_SECONDS) as base:
        silent = handshake(base, widget.public_key)

        async def a_quiet_reader() -> bool:
            url = base.replace("http://", "ws://") + f"/api/v1/embed/{widget.public_key}/ws"
            async with websockets.connect(url, origin=SHOP) as ws:  # answers pings in the background
                await asyncio.sleep(SLOW_READER_SECONDS * 2)
                await ws.send('{"type": "typing"}')  # an unknown type: ignored, but the socket is alive
                pong = await ws.ping()
                await asyncio.wait_for(pong, 5)
                return True

        assert asyncio.run(a_quiet_reader())
        time.sleep(1)  # the silent client has now not read for longer than the limit, twice over
        assert closed_by_peer(silent)
        silent.close()
