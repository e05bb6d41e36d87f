"""Issue 37 point 6: a signed visitor's thread is their token's `sub`, not the continuity key their browser
presents, and a generated file's link carries no continuity key.

alice and bob hold valid tokens for the same JWT widget. bob presenting alice's continuity key (it is only as
private as her browser) gets none of her history and writes nothing into her conversation; alice on another
device (another key) has her thread. A generated file is opened by the socket's `media` token — never by
`?visitor=` in a URL, which reaches access logs — and only for the thread that token was made for."""

from __future__ import annotations

import base64
import time

import jwt
import pytest
from channels.db import database_sync_to_async
from django.test import Client

from agents.models import Message, Run
from embeds import services
from media import store
from tests import factories
from tests.embeds.conftest import SHOP, communicator, next_frame, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SIGNING = "integrator-signing-secret-0123456789"
ALICE_KEY = "a1" * 16
BOB_KEY = "b0" * 16
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==")


@pytest.fixture
def jwt_widget(agent, builder, org):
    return factories.embed(agent, kind="widget", created_by=builder, auth_mode="jwt",
                           jwt_secret=factories.secret(org, value=SIGNING))


def token(sub: str) -> str:
    return jwt.encode({"sub": sub, "iat": int(time.time())}, SIGNING, algorithm="HS256")


async def opened(embed, *, sub: str | None = None, visitor: str) -> tuple:
    """(socket, ready frame, replayed messages)."""
    query = {"visitor": visitor, **({"token": token(sub)} if sub else {})}
    comm = communicator(embed.public_key, origin=SHOP, **query)
    connected, _ = await comm.connect(timeout=3)
    assert connected
    ready = await next_frame(comm)
    assert ready["type"] == "ready", ready
    history = await next_frame(comm)
    assert history["type"] == "history", history
    return comm, ready, history["data"]["messages"]


async def media_of(embed, *, sub: str | None = None, visitor: str) -> str:
    """The `media` token a socket's `ready` carries (the socket is closed again)."""
    comm, ready, _ = await opened(embed, sub=sub, visitor=visitor)
    await comm.disconnect()
    return ready["data"]["media"]


async def say(comm, text: str) -> None:
    await comm.send_json_to({"type": "message", "text": text})
    await wait_for(lambda: Message.objects.filter(role="user", content=text).exists())


def texts(messages: list[dict]) -> list[str]:
    return [m["text"] for m in messages]


async def test_bobs_token_with_alices_key_replays_nothing_of_hers_and_writes_nothing_into_her_thread(
        jwt_widget, dispatched):
    alice, _, before = await opened(jwt_widget, sub="alice", visitor=ALICE_KEY)
    assert before == []
    await say(alice, "Alice's private question")
    await alice.disconnect()

    bob, _, replayed = await opened(jwt_widget, sub="bob", visitor=ALICE_KEY)
    assert replayed == []  # not alice's thread
    await say(bob, "Bob's question")
    await bob.disconnect()

    def threads() -> tuple:
        alice_run = Run.objects.get(prompt="Alice's private question")
        bob_run = Run.objects.get(prompt="Bob's question")
        in_alices = list(Message.objects.filter(conversation_id=alice_run.conversation_id).values_list("content", flat=True))
        return alice_run.conversation_id, bob_run.conversation_id, in_alices

    alices, bobs, in_alices = await database_sync_to_async(threads)()
    assert alices != bobs
    assert in_alices == ["Alice's private question"]

    # alice's thread follows her `sub`: on another device, with another key, she has it (and only hers).
    again, _, replayed = await opened(jwt_widget, sub="alice", visitor="cc" * 16)
    assert texts(replayed) == ["Alice's private question"]
    await again.disconnect()
    # An outsider with no token is refused, whatever key it presents.
    outsider = communicator(jwt_widget.public_key, origin=SHOP, visitor=ALICE_KEY)
    connected, _ = await outsider.connect(timeout=3)
    assert connected and (await outsider.receive_output(timeout=3))["code"] == 4003
    await outsider.wait(timeout=3)


def generated_in_thread_of(prompt: str):
    """A file generated in the thread of the turn that asked `prompt` (its socket made the conversation)."""
    run = Run.objects.get(prompt=prompt)
    return store.save(organization_id=run.organization_id, run_id=None, conversation_id=run.conversation_id,
                      kind="image", data=PNG, media_type="image/png", name="sunset")


def fetch(embed, filename: str, query: str = "", **headers):
    return Client().get(f"/api/v1/embed/{embed.public_key}/generated/{filename}{query}", **headers)


async def test_a_signed_visitors_media_link_is_a_token_of_their_thread_and_never_their_key(jwt_widget, dispatched):
    alice, _, _ = await opened(jwt_widget, sub="alice", visitor=ALICE_KEY)
    await say(alice, "Paint me a sunset")
    await alice.disconnect()
    image = await database_sync_to_async(generated_in_thread_of)("Paint me a sunset")

    media = await media_of(jwt_widget, sub="alice", visitor=ALICE_KEY)
    assert ALICE_KEY not in media and "alice" not in media
    served = await database_sync_to_async(fetch)(jwt_widget, image.filename, f"?media={media}")
    assert served.status_code == 200 and b"".join(served.streaming_content) == PNG
    assert served["Cross-Origin-Resource-Policy"] == "cross-origin"

    # The continuity key opens nothing, in the URL or in a header: a signed visitor's thread is their `sub`.
    for query, headers in ((f"?visitor={ALICE_KEY}", {}), ("", {"HTTP_X_VISITOR": ALICE_KEY})):
        refused = await database_sync_to_async(fetch)(jwt_widget, image.filename, query, **headers)
        assert refused.status_code == 404 and refused.json()["error"]["code"] == "not_found"
    # bob, with alice's key, gets a token for his own thread: her file is not in it.
    bobs = await media_of(jwt_widget, sub="bob", visitor=ALICE_KEY)
    refused = await database_sync_to_async(fetch)(jwt_widget, image.filename, f"?media={bobs}")
    assert refused.status_code == 404


async def test_an_anonymous_visitors_media_token_opens_their_thread_only_on_their_embed(widget, agent, builder,
                                                                                     dispatched, monkeypatch):
    visitor, _, _ = await opened(widget, visitor=ALICE_KEY)
    await say(visitor, "Draw a cat")
    await visitor.disconnect()
    image = await database_sync_to_async(generated_in_thread_of)("Draw a cat")
    media = await media_of(widget, visitor=ALICE_KEY)
    assert ALICE_KEY not in media
    assert (await database_sync_to_async(fetch)(widget, image.filename, f"?media={media}")).status_code == 200
    # In a header (not a URL) an anonymous visitor's own key still opens it, for a client that fetches itself…
    assert (await database_sync_to_async(fetch)(widget, image.filename, HTTP_X_VISITOR=ALICE_KEY)).status_code == 200
    # …but never from the query string, which reaches access logs.
    assert (await database_sync_to_async(fetch)(widget, image.filename, f"?visitor={ALICE_KEY}")).status_code == 404

    other_widget = await database_sync_to_async(factories.embed)(agent, kind="widget", created_by=builder)
    others = await media_of(other_widget, visitor=ALICE_KEY)  # the same key on another embed
    for embed, query, status in (
        (other_widget, f"?media={media}", 404),  # a token of another embed
        (widget, f"?media={others}", 404),
        (widget, f"?media={media[:-4]}AAAA", 404),  # altered
        (widget, "?media=" + "A" * 600, 404),  # garbage, and long
        (widget, "?media=not%00base64", 422),  # a NUL: refused at the edge, before any view
    ):
        response = await database_sync_to_async(fetch)(embed, image.filename, query)
        assert response.status_code == status, (query, response.status_code)
    # Another visitor's token on the same embed does not open this visitor's file.
    bobs = await media_of(widget, visitor=BOB_KEY)
    refused = await database_sync_to_async(fetch)(widget, image.filename, f"?media={bobs}")
    assert refused.status_code == 404
    # An expired token opens nothing.
    monkeypatch.setattr(services, "MEDIA_TOKEN_SECONDS", -1)
    stale_token = await media_of(widget, visitor=ALICE_KEY)
    stale = await database_sync_to_async(fetch)(widget, image.filename, f"?media={stale_token}")
    assert stale.status_code == 404
