"""What the embed surface answers to a key that is not one and to a frame no visitor could send: never an
HTTP 500 at the handshake or a database error, always the documented close code with its reason text
(4003 refused, 4029 too many connections, 4003 with its own reason for a frame too large), through the full
ASGI app. What daphne puts on the wire: test_socket_frames_issue37.py."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agenticos import metrics
from agents.models import Run
from embeds.consumers import (
    RATE_LIMITED_MESSAGE,
    REFUSED_MESSAGE,
    TOO_BIG_MESSAGE,
    max_frame_chars,
)
from tests.embeds.conftest import SHOP, communicator, next_frame

pytestmark = pytest.mark.django_db(transaction=True)

KEYLESS_PATHS = [
    "/api/v1/embed//ws",
    "/api/v1/embed/ws",
    "/api/v1/embed/%00/ws",
    "/api/v1/embed/abc%00def/ws",
    "/api/v1/embed/" + "a" * 65 + "/ws",
    "/api/v1/embed/abc/ws/more",
    "/api/v1/embed/",
]


def project_application():
    """The application daphne serves (config.asgi), not a test router."""
    from config.asgi import application

    return application


async def close_message(comm) -> dict:
    connected, _ = await comm.connect(timeout=3)
    assert connected  # accepted first, so the client can read the code
    message = await comm.receive_output(timeout=3)
    await comm.wait(timeout=3)  # the refused socket's consumer ends by itself
    return message


@pytest.mark.parametrize("path", KEYLESS_PATHS)
async def test_a_socket_path_without_a_well_formed_key_is_refused_with_4003_and_its_reason(path):
    comm = WebsocketCommunicator(project_application(), path, headers=[(b"origin", SHOP.encode())])
    comm.scope["client"] = ("203.0.113.70", 50000)
    message = await close_message(comm)
    assert message == {"type": "websocket.close", "code": 4003, "reason": REFUSED_MESSAGE}


async def test_too_many_connections_close_with_4029_and_its_reason(widget, settings):
    settings.RATE_LIMIT_EMBED_PER_MINUTE = 1
    first = communicator(widget.public_key, address="198.51.100.70")
    connected, _ = await first.connect(timeout=3)
    assert connected and (await next_frame(first))["type"] == "ready"
    message = await close_message(communicator(widget.public_key, address="198.51.100.70"))
    assert message == {"type": "websocket.close", "code": 4029, "reason": RATE_LIMITED_MESSAGE}
    await first.disconnect()


async def test_a_frame_above_the_limit_is_closed_4003_with_its_reason_and_starts_nothing(widget, dispatched):
    open_sockets = metrics.SOCKETS.labels("embed")._value.get
    before = open_sockets()
    comm = communicator(widget.public_key)
    connected, _ = await comm.connect(timeout=3)
    assert connected and [(await next_frame(comm))["type"] for _ in range(2)] == ["ready", "history"]
    assert open_sockets() == before + 1
    oversized = json.dumps({"type": "message", "text": "x" * max_frame_chars()})
    await comm.send_to(text_data=oversized)
    message = await comm.receive_output(timeout=3)
    assert message == {"type": "websocket.close", "code": 4003, "reason": TOO_BIG_MESSAGE}
    await comm.wait(timeout=3)
    assert open_sockets() == before  # closed by the server: no disconnect follows, the gauge still goes down
    assert dispatched == []
    assert not await database_sync_to_async(Run.objects.filter(agent=widget.agent).exists)()


async def test_binary_frames_above_the_limit_are_closed_4003_too(widget, dispatched):
    comm = communicator(widget.public_key)
    connected, _ = await comm.connect(timeout=3)
    assert connected and [(await next_frame(comm))["type"] for _ in range(2)] == ["ready", "history"]
    await comm.send_to(bytes_data=b"\0" * (max_frame_chars() + 1))
    message = await comm.receive_output(timeout=3)
    assert message["type"] == "websocket.close" and message["code"] == 4003
    await comm.wait(timeout=3)
    assert dispatched == []


async def test_a_frame_at_the_limit_is_read_and_the_socket_stays_open(widget, dispatched):
    comm = communicator(widget.public_key)
    connected, _ = await comm.connect(timeout=3)
    assert connected and [(await next_frame(comm))["type"] for _ in range(2)] == ["ready", "history"]
    frame = json.dumps({"type": "message", "text": "At the limit?", "pad": ""})
    frame = json.dumps({"type": "message", "text": "At the limit?", "pad": "x" * (max_frame_chars() - len(frame))})
    assert len(frame) == max_frame_chars()
    await comm.send_to(text_data=frame)  # a message padded by a field the server ignores
    # The socket stays open: frames are handled in order, so the next frame out answers the next bad frame
    # in — not a close, and not an error about the message before it…
    await comm.send_to(text_data="{not json")
    message = await comm.receive_output(timeout=3)
    assert message["type"] == "websocket.send" and json.loads(message["text"])["data"]["code"] == "bad_frame"
    # …which was read: the server recorded it as a turn (a frame closed 4003 starts nothing).
    run = await database_sync_to_async(lambda: Run.objects.filter(agent=widget.agent).get())()
    assert run.options["recorded_prompt"] == "At the limit?" and dispatched == [str(run.pk)]
    await comm.disconnect()


# ------------------------------------------------------------------ the public HTTP endpoints


# A NUL byte anywhere in a request is refused at the edge (422) before any view, in the envelope, never the database
# error it was; without that edge the view itself answers "not available" (the next test).
NUL_KEYS = ["%00", "abc%00def"]


@pytest.mark.parametrize("suffix", ["config", "logo"])
@pytest.mark.parametrize("key", ["a" * 65, "%C3%A9", "abc.def", *NUL_KEYS])
def test_a_key_that_is_not_one_is_refused_in_the_envelope(client, key, suffix):
    response = client.get(f"/api/v1/embed/{key}/{suffix}")
    if key in NUL_KEYS:
        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid"
    else:
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_available"


def test_the_config_view_refuses_a_malformed_key_without_a_query(django_assert_num_queries):
    from django.test import RequestFactory

    from embeds.views import page_config_json

    with django_assert_num_queries(0):
        response = page_config_json(RequestFactory().get("/"), "abc\x00def")
    assert response.status_code == 404 and json.loads(response.content)["error"]["code"] == "not_available"


@pytest.mark.parametrize("key", NUL_KEYS)
def test_the_widget_script_and_the_hosted_page_never_fail_on_a_nul_key(client, key):
    assert client.get(f"/api/v1/embed/{key}/widget.js").status_code == 422  # the API's edge (agenticos.middleware)
    assert client.get(f"/e/{key}").status_code == 404  # the hosted page: "not available", never a server error


def test_an_upload_to_a_malformed_key_is_not_available_and_stores_nothing(client):
    from embeds.models import EmbedFile

    response = client.post("/api/v1/embed/abc.def/files", {}, HTTP_ORIGIN=SHOP)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_available"
    assert not EmbedFile.objects.exists()
