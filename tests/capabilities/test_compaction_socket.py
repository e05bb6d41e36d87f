"""The server side of chat's "summarizing…": a turn whose run is compacted sends the web chat socket a
`compaction` frame — `{"type": "compaction", "data": {"status": "summarizing", "messages": <n>}}` — while the
summary is written, after the tool result that outgrew the window and before the next response streams, through
the full ASGI app with a real Celery worker and the real OpenAI client against the fake server."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from knowledge.memory import Store, write_note
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of
from tests.runner.test_chat_socket import connect, receive_until, until_the_worker_is_idle

pytestmark = pytest.mark.django_db(transaction=True)

BIG = "\n".join(f"row {i}: parcel {i * 11} signed for at the harbour office" for i in range(150))


def compacting_agent(org, owner, fake_openai):
    from agents import services

    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-compaction-ws-0000",
                                      base_url=fake_openai.base_url)
    actor = actor_of(owner, org)
    agent = services.create_agent(actor=actor, name="Parcels", spec={
        "name": "Parcels", "model_profile_id": str(profile.pk),
        "capabilities": [{"id": "memory_files"}, {"id": "compaction", "config": {
            "context_window": 4000, "max_fraction": 0.5, "keep_messages": 1}}]})
    services.publish_agent(actor=actor, agent=agent)
    write_note(Store(str(org.pk), str(agent.pk), owner_user_id=owner.pk), "parcels.md", BIG)
    return agent


async def test_the_chat_socket_is_told_while_a_summary_is_written(org, owner, fake_openai, celery_worker):
    agent = await database_sync_to_async(compacting_agent)(org, owner, fake_openai)
    fake_openai.queue(Reply.tool_call("read_memory", {"name": "parcels.md"}),
                      Reply.text("SUMMARY: 150 parcels, all signed for at the harbour office."),
                      Reply.text("All 150 parcels were signed for."))
    communicator, connected = await connect(owner, org)
    assert connected
    await communicator.send_json_to({"type": "message", "agent_id": str(agent.pk), "text": "were they signed?"})

    frames = await receive_until(communicator)

    types = [f["type"] for f in frames]
    assert types[-1] == "complete" and frames[-1]["data"]["status"] == "completed"
    compaction = [f for f in frames if f["type"] == "compaction"]
    assert len(compaction) == 1
    assert compaction[0] == {"type": "compaction", "data": {"status": "summarizing", "messages": 3}}
    # After the tool result that outgrew the window, while the next request waits for it: nothing of the
    # answer has streamed yet.
    at = types.index("compaction")
    after_tool = types.index("tool_result")
    assert after_tool < at and "part_start" not in types[after_tool:at] and "part_start" in types[at:]
    assert "context summarization" in fake_openai.chat_requests[1].text  # the frame announced a real summary
    assert await communicator.receive_nothing(timeout=0.3)
    await until_the_worker_is_idle()
    await communicator.disconnect()
