"""The close code and reason a client receives from a real daphne (agenticos.daphne_close_reason), for every
code the sockets send: the spec's 4003/4029 with their reasons, 1000, and RFC 6455's 1011 — which autobahn's
sendClose refuses, so the spec's "this client was not reading" reached the client as daphne's 1011 for an
exception, without its reason, after a traceback."""

from __future__ import annotations

import asyncio

import pytest
import websockets

from embeds.consumers import RATE_LIMITED_MESSAGE, REFUSED_MESSAGE, SLOW_READER_CODE, SLOW_READER_MESSAGE
from tests.fakes import live_daphne


@pytest.fixture(scope="module")
def echo_base():
    with live_daphne.serving_daphne("tests.embeds.close_echo_app:application", "close-echo") as base:
        yield base.replace("http://", "ws://")


async def closed_with(base: str, request: str) -> tuple[int, str]:
    async with websockets.connect(f"{base}/ws", open_timeout=10) as ws:
        await ws.send(request)
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code, closed.value.rcvd.reason


@pytest.mark.parametrize(("code", "reason"), [
    (SLOW_READER_CODE, SLOW_READER_MESSAGE),
    (1011, ""),
    (1008, "Policy."),
    (4003, REFUSED_MESSAGE),
    (4029, RATE_LIMITED_MESSAGE),
    (1000, "Bye."),
    (1000, ""),
    (4003, ""),
])
def test_the_client_receives_the_code_and_reason_the_consumer_closed_with(echo_base, code, reason):
    assert asyncio.run(closed_with(echo_base, f"{code} {reason}".strip())) == (code, reason)


def test_a_reason_longer_than_a_close_frame_holds_is_cut_on_a_character_boundary(echo_base):
    code, reason = asyncio.run(closed_with(echo_base, "1011 " + "é" * 100))
    assert code == 1011 and reason == "é" * 61  # 123 bytes hold 61 two-byte characters
