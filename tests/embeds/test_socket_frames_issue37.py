"""What a client receives on the wire, from a real daphne serving the project's ASGI app (config.asgi), when it
sends a frame no client of ours sends — on the embed socket and on the web chat socket (/ws/chat/):

- JSON nested 10,000 deep (the parser's recursion runs out at ~1,000 levels) gets a `bad_frame` error frame and
  the socket goes on answering, never the 1011 and traceback an unhandled RecursionError gave;
- a frame larger than any message is closed with the spec's 4003 ("do not retry: the answer will not change"),
  with its reason. The consumer's own 1009 was refused by daphne's close (autobahn sends only 1000 and
  3000–4999), so the client got 1011 — "reconnect" — and sent the same frame again.

The ASGI-level tests (test_close_codes.py) cannot see this: WebsocketCommunicator hands the close message back
as the consumer wrote it, whatever daphne would have made of it."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from agents.consumers import FRAME_REFUSED_CODE, TOO_BIG_MESSAGE, max_frame_chars
from agents.models import Run
from tests.embeds.conftest import SHOP
from tests.fakes import live_daphne
from tests.runner.test_chat_socket import session_cookie

pytestmark = [pytest.mark.django_db(transaction=True)]

DEEP = "[" * 10_000 + "]" * 10_000
TIMEOUT = 10


@pytest.fixture(scope="module")
def daphne_base(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), live_daphne.serving_daphne("config.asgi:application", "issue37-frames") as base:
        yield base.replace("http://", "ws://")


async def next_frame(ws) -> dict:
    return json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))


async def close_of(ws) -> tuple[int | None, str | None]:
    """The close frame the server sent, as the client received it (after nothing else was sent)."""
    with pytest.raises(websockets.ConnectionClosed) as closed:
        extra = await asyncio.wait_for(ws.recv(), TIMEOUT)
        pytest.fail(f"a frame instead of a close: {extra[:200]!r}")
    received = closed.value.rcvd
    return (received.code, received.reason) if received is not None else (None, None)


def embed_socket(base: str, key: str):
    return websockets.connect(f"{base}/api/v1/embed/{key}/ws", origin=SHOP, max_size=None, open_timeout=TIMEOUT)


def chat_socket(base: str, cookie: str):
    return websockets.connect(f"{base}/ws/chat/", additional_headers={"Cookie": cookie}, max_size=None,
                              open_timeout=TIMEOUT)


# ------------------------------------------------------------------ the embed socket


def test_a_10000_deep_frame_on_the_embed_socket_is_a_bad_frame_and_the_socket_goes_on(daphne_base, widget):
    async def scenario() -> list[dict]:
        async with embed_socket(daphne_base, widget.public_key) as ws:
            assert [(await next_frame(ws))["type"] for _ in range(2)] == ["ready", "history"]
            await ws.send(DEEP)
            first = await next_frame(ws)
            # Valid JSON at the top, the depth inside a field: the same answer, and no turn.
            await ws.send(json.dumps({"type": "message", "text": "hi", "context": {"x": "PLACEHOLDER"}})
                          .replace('"PLACEHOLDER"', DEEP))
            second = await next_frame(ws)
            await ws.send("{not json")  # still answering, in order
            third = await next_frame(ws)
            return [first, second, third]

    frames = asyncio.run(scenario())
    assert [f["type"] for f in frames] == ["error"] * 3
    assert [f["data"]["code"] for f in frames] == ["bad_frame"] * 3
    assert not Run.objects.filter(agent=widget.agent).exists()


def test_an_oversized_frame_on_the_embed_socket_reaches_the_client_as_4003_with_its_reason(daphne_base, widget):
    async def scenario() -> tuple[int | None, str | None]:
        async with embed_socket(daphne_base, widget.public_key) as ws:
            assert [(await next_frame(ws))["type"] for _ in range(2)] == ["ready", "history"]
            await ws.send(json.dumps({"type": "message", "text": "x" * max_frame_chars()}))
            return await close_of(ws)

    assert asyncio.run(scenario()) == (FRAME_REFUSED_CODE, TOO_BIG_MESSAGE)
    assert FRAME_REFUSED_CODE == 4003  # the spec's "refused: do not retry, the answer will not change"
    assert not Run.objects.filter(agent=widget.agent).exists()


# ------------------------------------------------------------------ the web chat socket


def test_a_10000_deep_frame_on_the_chat_socket_is_a_bad_frame_and_the_socket_goes_on(daphne_base, org, owner):
    cookie = session_cookie(owner, org)

    async def scenario() -> list[dict]:
        async with chat_socket(daphne_base, cookie) as ws:
            await ws.send(DEEP)
            first = await next_frame(ws)
            await ws.send(json.dumps({"type": "watch", "run_id": "PLACEHOLDER"}).replace('"PLACEHOLDER"', DEEP))
            second = await next_frame(ws)
            await ws.send("{not json")
            third = await next_frame(ws)
            await ws.send(json.dumps({"type": "no such type"}))  # the socket still routes frames
            fourth = await next_frame(ws)
            return [first, second, third, fourth]

    frames = asyncio.run(scenario())
    assert [f["type"] for f in frames] == ["error"] * 4
    assert [f["data"]["code"] for f in frames] == ["bad_frame"] * 4
    assert "Unknown frame type" in frames[3]["data"]["message"]


def test_an_oversized_frame_on_the_chat_socket_reaches_the_client_as_4003_with_its_reason(daphne_base, org, owner,
                                                                                         agent):
    cookie = session_cookie(owner, org)

    async def scenario() -> tuple[int | None, str | None]:
        async with chat_socket(daphne_base, cookie) as ws:
            await ws.send(json.dumps({"type": "message", "agent_id": str(agent.pk),
                                      "text": "x" * max_frame_chars()}))
            return await close_of(ws)

    assert asyncio.run(scenario()) == (FRAME_REFUSED_CODE, TOO_BIG_MESSAGE)
    assert not Run.objects.filter(agent=agent).exists()
