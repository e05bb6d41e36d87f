"""Socket admission through the full ASGI app: one refusal (4003) whatever the cause, 4029 for too many
connections from an address (counted in Redis), origin and JWT rules, pause on the next connect."""

from __future__ import annotations

import json
import time

import jwt
import pytest
import redis
from channels.db import database_sync_to_async

from agenticos.tenancy import actor_for_membership
from agents.models import Message, Run
from embeds import services
from embeds.consumers import REFUSED_MESSAGE
from tests import factories
from tests.embeds.conftest import FRONTEND, SHOP, communicator, connect_and_close_code, next_frame

pytestmark = pytest.mark.django_db(transaction=True)

SIGNING = "integrator-signing-secret-0123456789"


@pytest.fixture
def jwt_widget(agent, builder, org):
    return factories.embed(
        agent, kind="widget", created_by=builder, auth_mode="jwt", jwt_secret=factories.secret(org, value=SIGNING)
    )


def token(secret: str = SIGNING, **claims) -> str:
    now = int(time.time())
    body = {"sub": "customer-42", "iat": now}
    body.update(claims)
    return jwt.encode({k: v for k, v in body.items() if v is not None}, secret, algorithm="HS256")


async def close_of(comm) -> dict:
    connected, _ = await comm.connect(timeout=3)
    assert connected
    message = await comm.receive_output(timeout=3)
    await comm.wait(timeout=3)  # a refused socket's consumer ends by itself
    return message


async def test_an_allowed_origin_is_admitted_and_told_it_is_anonymous(widget, dispatched):
    comm = communicator(widget.public_key, origin=SHOP)
    connected, _ = await comm.connect(timeout=3)
    assert connected
    ready = await next_frame(comm)
    assert ready["type"] == "ready" and ready["data"]["visitor"] is False and set(ready["data"]) == {"visitor", "media"}
    assert await next_frame(comm) == {"type": "history", "data": {"messages": []}}  # a new visitor's empty thread
    await comm.send_json_to({"type": "message", "text": "Do you ship to Poland?"})
    # Frames are handled in order: the next frame out answers the bad frame sent after the message, so the
    # socket was neither closed nor sent anything else (the message got no error)…
    await comm.send_to(text_data="{not json")
    after = await next_frame(comm)
    assert after["type"] == "error" and after["data"]["code"] == "bad_frame", after
    # …and the server recorded the message as this widget's turn, for no signed-in visitor.
    run = await database_sync_to_async(Run.objects.get)()
    assert [str(run.pk)] == dispatched
    assert run.embed_id == widget.pk and run.options["recorded_prompt"] == "Do you ship to Poland?"
    asked = await database_sync_to_async(Message.objects.get)(run=run)
    assert asked.author_id is None and asked.author_label == ""  # a visitor with a token is "visitor <sub>"
    await comm.disconnect()


@pytest.mark.parametrize(
    "origin", ["https://evil.example.com", None, "null", "https://shop.example.com.evil.net", "http://shop.example.com"]
)
async def test_an_origin_not_on_the_list_is_refused_with_4003(widget, origin):
    message = await close_of(communicator(widget.public_key, origin=origin))
    assert message["type"] == "websocket.close" and message["code"] == 4003


async def test_every_refusal_carries_the_same_message(widget, jwt_widget):
    refusals = [
        communicator(widget.public_key, origin="https://evil.example.com"),
        communicator("no-such-key", origin=SHOP),
        communicator(jwt_widget.public_key, origin=SHOP),
        communicator(jwt_widget.public_key, origin=SHOP, token=token(secret="another-signing-secret-0123456789abcdef")),
    ]
    seen = set()
    for comm in refusals:
        message = await close_of(comm)
        seen.add((message["code"], message.get("reason")))
    assert seen == {(4003, REFUSED_MESSAGE)}


async def test_a_page_is_admitted_only_from_the_deployments_own_origin(page):
    assert await connect_and_close_code(communicator(page.public_key, origin=SHOP)) == 4003
    comm = communicator(page.public_key, origin=FRONTEND)
    connected, _ = await comm.connect(timeout=3)
    assert connected
    assert (await next_frame(comm))["type"] == "ready"
    assert await next_frame(comm) == {"type": "history", "data": {"messages": []}}
    await comm.disconnect()


async def test_a_valid_token_identifies_the_visitor(jwt_widget):
    comm = communicator(jwt_widget.public_key, token=token())
    connected, _ = await comm.connect(timeout=3)
    assert connected
    ready = await next_frame(comm)
    assert ready["type"] == "ready" and ready["data"]["visitor"] is True and set(ready["data"]) == {"visitor", "media"}
    await comm.disconnect()


# Times are offsets from the moment the test runs (seconds): computed at collection, "an hour from now" is in
# the past by the time a long suite reaches the test.
@pytest.mark.parametrize(
    "claims",
    [
        {"sub": None},
        {"iat": None},
        {"iat": -13 * 3600},
        # exp may shorten the window, never extend it past 12 hours.
        {"iat": -13 * 3600, "exp": 3600},
        {"exp": -120},
        {"iat": 3600},
        {"sub": ""},
        {"sub": 42},
    ],
    ids=["no-sub", "no-iat", "iat-too-old", "exp-cannot-extend", "expired", "iat-in-future", "empty-sub", "int-sub"],
)
async def test_a_token_breaking_a_rule_is_refused(jwt_widget, claims):
    now = int(time.time())
    claims = {key: now + value if key in ("iat", "exp") and value is not None else value
              for key, value in claims.items()}
    if claims.get("sub") == 42:
        raw = jwt.encode({"sub": 42, "iat": now}, SIGNING, algorithm="HS256")
    else:
        raw = token(**claims)
    assert await connect_and_close_code(communicator(jwt_widget.public_key, token=raw)) == 4003


async def test_an_exp_that_shortens_the_window_is_honoured(jwt_widget):
    raw = token(exp=int(time.time()) + 600)
    assert await connect_and_close_code(communicator(jwt_widget.public_key, token=raw)) is None


async def test_a_token_signed_with_another_algorithm_is_refused(jwt_widget):
    raw = jwt.encode({"sub": "x", "iat": int(time.time())}, SIGNING, algorithm="HS512")
    assert await connect_and_close_code(communicator(jwt_widget.public_key, token=raw)) == 4003
    unsigned = jwt.encode({"sub": "x", "iat": int(time.time())}, None, algorithm="none")
    assert await connect_and_close_code(communicator(jwt_widget.public_key, token=unsigned)) == 4003


async def test_pausing_takes_effect_on_the_next_connect(widget, owner, org):
    first = communicator(widget.public_key)
    connected, _ = await first.connect(timeout=3)
    assert connected and (await next_frame(first))["type"] == "ready"

    def pause():
        from agenticos.models import Membership

        # The agent's owner: pausing an agent's embed needs edit access to that agent.
        actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
        services.set_paused(actor=actor, embed=widget, paused=True)

    await database_sync_to_async(pause)()
    assert await connect_and_close_code(communicator(widget.public_key)) == 4003
    await first.disconnect()


async def test_too_many_connections_from_one_address_get_4029_across_consumer_instances(widget, settings,
                                                                                       ratelimit_clock):
    settings.RATE_LIMIT_EMBED_PER_MINUTE = 2
    # Two separate consumer instances spend the address's allowance…
    assert await connect_and_close_code(communicator(widget.public_key, address="198.51.100.1")) is None
    assert await connect_and_close_code(communicator(widget.public_key, address="198.51.100.1")) is None
    # …so a third is told to wait (not refused), while another address is unaffected.
    message = await close_of(communicator(widget.public_key, address="198.51.100.1"))
    assert message["code"] == 4029
    assert await connect_and_close_code(communicator(widget.public_key, address="198.51.100.2")) is None
    # The next minute the address has its allowance back.
    ratelimit_clock.advance(60)
    assert await connect_and_close_code(communicator(widget.public_key, address="198.51.100.1")) is None


async def test_the_connection_counter_lives_in_redis_shared_by_every_worker(widget, settings, ratelimit_clock):
    settings.RATE_LIMIT_EMBED_PER_MINUTE = 3
    # Another web process admitting three sockets from this address writes the same counter.
    from agenticos import ratelimit

    other_process = redis.Redis.from_url(settings.REDIS_URL)
    slot = int(ratelimit_clock()) // 60
    other_process.set(ratelimit.redis_name("rl", "embed-ws", "198.51.100.9", slot), 3, ex=65)
    assert ratelimit.client() is not other_process
    assert await connect_and_close_code(communicator(widget.public_key, address="198.51.100.9")) == 4029


async def test_refused_connections_also_count_towards_the_address_limit(widget, settings):
    settings.RATE_LIMIT_EMBED_PER_MINUTE = 1
    assert await connect_and_close_code(communicator(widget.public_key, origin="https://evil.example")) == 4003
    assert await connect_and_close_code(communicator(widget.public_key)) == 4029


async def test_a_malformed_frame_gets_an_error_and_an_unknown_type_is_ignored(widget):
    comm = communicator(widget.public_key)
    await comm.connect(timeout=3)
    assert [(await next_frame(comm))["type"] for _ in range(2)] == ["ready", "history"]
    await comm.send_to(text_data="{not json")
    assert (await next_frame(comm))["type"] == "error"
    await comm.send_to(text_data=json.dumps({"type": "typing", "whatever": 1}))
    # Frames are handled in order: the next frame out answers the next bad frame in, so the unknown one
    # before it produced nothing (no error, no run).
    await comm.send_to(text_data="[also not an object")
    assert (await next_frame(comm))["data"]["code"] == "bad_frame"
    assert await database_sync_to_async(Run.objects.count)() == 0
    await comm.disconnect()


async def test_the_page_origin_is_derived_from_frontend_url(settings, page):
    settings.FRONTEND_URL = "https://Chat.Example.org:8443/"
    assert services.deployment_origin() == "https://chat.example.org:8443"
    # A hosted page is admitted from the new origin (in any case) and no longer from the one before.
    assert await connect_and_close_code(communicator(page.public_key, origin="https://chat.EXAMPLE.org:8443")) is None
    assert await connect_and_close_code(communicator(page.public_key, origin=FRONTEND)) == 4003
