"""Issue 37.6: the widget's and the hosted page's continuity key (and a signed visitor's token) travel in the
WebSocket handshake's Sec-WebSocket-Protocol, never in the URL, which reaches access logs. The server answers
with `agenticos.v1` (a browser fails a handshake that names none of the protocols it offered), reads the key
there first, and still takes the spec's `?visitor=` from a client of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from embeds.consumers import PROTOCOL, carried
from tests import factories
from tests.embeds.conftest import FRONTEND, application, communicator, next_frame, ws_path
from tests.embeds.test_visitor_history import VISITOR, seed_thread

pytestmark = pytest.mark.django_db(transaction=True)
STATIC = Path(__file__).resolve().parents[2] / "embeds" / "static" / "embeds"


async def _history(comm) -> tuple[str | None, list[dict]]:
    connected, subprotocol = await comm.connect(timeout=3)
    assert connected
    assert (await next_frame(comm))["type"] == "ready"
    history = await next_frame(comm)
    await comm.disconnect()
    return subprotocol, history["data"]["messages"]


async def test_the_key_in_the_handshake_replays_the_thread_and_the_answer_names_our_protocol(agent, builder):
    page = await database_sync_to_async(factories.embed)(agent, kind="page", created_by=builder)
    await database_sync_to_async(seed_thread)(page)
    comm = WebsocketCommunicator(application(), ws_path(page.public_key), headers=[(b"origin", FRONTEND.encode())],
                                 subprotocols=[PROTOCOL, f"agenticos.visitor.{VISITOR}"])
    comm.scope["client"] = ("203.0.113.7", 50000)
    subprotocol, messages = await _history(comm)
    assert subprotocol == PROTOCOL
    assert [m["role"] for m in messages] == ["user", "assistant"]
    # The spec's query parameter still works for a client of its own.
    _, by_query = await _history(communicator(page.public_key, origin=FRONTEND, visitor=VISITOR))
    assert by_query == messages
    # The handshake's key wins over the URL's: another key in the header is another (empty) thread.
    other = WebsocketCommunicator(application(), ws_path(page.public_key, visitor=VISITOR),
                                  headers=[(b"origin", FRONTEND.encode())],
                                  subprotocols=[PROTOCOL, "agenticos.visitor." + "b" * 32])
    other.scope["client"] = ("203.0.113.7", 50000)
    assert (await _history(other))[1] == []


def test_the_clients_put_no_key_or_token_in_the_socket_url():
    for name in ("widget.js", "page.js"):
        source = (STATIC / name).read_text()
        assert "/ws?" not in source and "&token=" not in source, name
        assert '"agenticos.visitor." + visitorKey()' in source, name


def test_only_the_first_of_each_and_nothing_else_is_read():
    assert carried(["agenticos.v1", "agenticos.visitor.aa", "agenticos.visitor.bb", "agenticos.token.x.y.z",
                    "other.visitor.cc"]) == {"visitor": "aa", "token": "x.y.z"}
    assert carried([]) == {}
