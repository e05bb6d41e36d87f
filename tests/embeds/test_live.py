"""End to end: the real runner (a Celery worker on the offline demo model) behind the socket, through the
full ASGI app and through daphne in a subprocess with an external client library (`websockets`)."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets
from channels.db import database_sync_to_async

from agents.models import Message, Run
from tests import factories
from tests.embeds.conftest import SHOP, communicator, frames_until_end, next_frame, wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
]


def ws_url(base: str, key: str, **query: str) -> str:
    from urllib.parse import urlencode

    url = base.replace("http://", "ws://") + f"/api/v1/embed/{key}/ws"
    return f"{url}?{urlencode(query)}" if query else url


async def test_a_real_run_streams_word_by_word_and_completes_without_usage(widget, celery_worker):
    comm = communicator(widget.public_key)
    await comm.connect(timeout=5)
    assert (await next_frame(comm))["type"] == "ready"
    await comm.send_json_to({"type": "message", "text": "Hello there, who are you?"})
    frames = await frames_until_end(comm, timeout=30)
    types = [f["type"] for f in frames]
    assert types[-1] == "complete", frames
    run = await database_sync_to_async(Run.objects.get)(embed_id=widget.pk)
    assert frames[-1]["data"] == {"run_id": str(run.pk)}  # its run (what 👍/👎 names), never its usage
    assert types.count("text_delta") > 1 and "model_request_start" in types
    assert "user_prompt_processed" not in types and "message_saved" not in types
    answer = "".join(f["data"]["content"] for f in frames if f["type"] == "text_delta")
    assert run.surface == "embed" and run.status == "completed"
    assistant = await wait_for(
        lambda: Message.objects.filter(run=run, role="assistant").first(), timeout=10
    )
    assert assistant.content.strip() == answer.strip()
    await comm.disconnect()


async def test_daphne_refuses_a_disallowed_origin_with_4003_to_an_external_client(daphne_server, widget):
    async with websockets.connect(ws_url(daphne_server, widget.public_key), origin="https://evil.example") as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    # daphne forwards the ASGI close reason (agenticos/daphne_close_reason.py): the visitor can be told why.
    assert closed.value.rcvd.code == 4003
    assert closed.value.rcvd.reason.startswith("Refused. Do not retry")


async def test_an_external_client_talks_to_the_agent_through_daphne(daphne_server, widget, celery_worker):
    async with websockets.connect(ws_url(daphne_server, widget.public_key), origin=SHOP) as ws:
        ready = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert ready["type"] == "ready" and ready["data"]["visitor"] is False and set(ready["data"]) == {"visitor", "media"}
        await ws.send(json.dumps({"type": "message", "text": "Do you ship to Poland?", "unknown_field": 1}))
        frames = []
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
            frames.append(frame)
            if frame["type"] in ("complete", "error"):
                break
    assert frames[-1]["type"] == "complete" and set(frames[-1]["data"]) == {"run_id"}, frames
    assert any(f["type"] == "text_delta" for f in frames)
    run = await database_sync_to_async(Run.objects.get)(embed_id=widget.pk)
    assert run.status == "completed"


async def test_a_hosted_page_thread_is_replayed_after_reconnecting_through_daphne(daphne_server, agent, builder, celery_worker):
    page = await database_sync_to_async(factories.embed)(agent, kind="page", created_by=builder)
    visitor = "c0ffee" * 6
    url = ws_url(daphne_server, page.public_key, visitor=visitor)
    async with websockets.connect(url, origin=daphne_server) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        assert json.loads(await ws.recv()) == {"type": "history", "data": {"messages": []}}
        await ws.send(json.dumps({"type": "message", "text": "Remember me?"}))
        while json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] not in ("complete", "error"):
            pass
    await wait_for(lambda: Message.objects.filter(role="assistant", conversation__external_key__endswith=visitor).exists(), 10)
    async with websockets.connect(url, origin=daphne_server) as ws:
        assert json.loads(await ws.recv())["type"] == "ready"
        history = json.loads(await ws.recv())
    roles = [(m["role"], m["text"][:12]) for m in history["data"]["messages"]]
    assert roles[0] == ("user", "Remember me?") and roles[1][0] == "assistant"


async def test_the_embeds_own_monthly_budget_stops_a_run_before_the_model(agent, builder, celery_worker):
    from decimal import Decimal

    from governance.models import SpendEntry

    widget = await database_sync_to_async(factories.embed)(
        agent, kind="widget", created_by=builder, monthly_budget_usd=Decimal("0.50")
    )
    await database_sync_to_async(SpendEntry.objects.create)(
        organization_id=agent.organization_id, agent=agent, embed_id=widget.pk, surface="embed",
        cost_usd=Decimal("0.50"),
    )
    comm = communicator(widget.public_key)
    await comm.connect(timeout=5)
    await next_frame(comm)
    await comm.send_json_to({"type": "message", "text": "Hello?"})
    frames = await frames_until_end(comm, timeout=30)
    assert frames[-1]["type"] == "error", frames
    assert "embed" in frames[-1]["data"]["message"] and "budget" in frames[-1]["data"]["message"]
    assert "text_delta" not in [f["type"] for f in frames]
    await comm.disconnect()
