"""The leak filter on the real path: a scripted model thinks and calls a tool through the runner
(agents.runner.execute, frames published to the run's group as in production) and the visitor's socket gets
the answer without the thinking, the tool's arguments or its result. The runner's own frames are the control:
they do carry all three, so a filter that let any through would fail here."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import DeltaThinkingPart, DeltaToolCall, FunctionModel

from agents.models import ToolCall
from agents.runner import execute_collecting
from tests import factories
from tests.embeds.conftest import FRONTEND, SHOP, communicator, frames_until_end, next_frame, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

THOUGHT = "PRIVATE-CHAIN-OF-THOUGHT-41"
ZONE = "Pacific-Chatham"  # the tool's argument (a file pattern in the agent's workspace)


@pytest.fixture
def thinking_tool_model(scripted_model):
    async def stream(messages, info):
        if any(isinstance(part, ToolReturnPart) for part in getattr(messages[-1], "parts", [])):
            yield "It is evening there."
            return
        yield {0: DeltaThinkingPart(content=THOUGHT)}
        yield {1: DeltaToolCall(name="glob", json_args=json.dumps({"pattern": f"**/{ZONE}*"}), tool_call_id="t1")}

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


@pytest.fixture
def files_agent(org, owner):
    return factories.published_agent(org, owner, name="Files Helper", capabilities=[{"id": "sandbox"}])


async def visit_and_run(embed, dispatched) -> tuple[list[dict], list[dict]]:
    """Open the visitor's socket, send a message, execute its run for real; (visitor's frames, runner's)."""
    comm = communicator(embed.public_key, origin=FRONTEND if embed.kind == "page" else SHOP)
    connected, _ = await comm.connect(timeout=5)
    assert connected and (await next_frame(comm))["type"] == "ready"
    if embed.kind == "page":
        assert (await next_frame(comm))["type"] == "history"
    await comm.send_json_to({"type": "message", "text": "What time is it in Chatham?"})
    await wait_for(lambda: dispatched)
    runner_frames = await database_sync_to_async(execute_collecting, thread_sensitive=False)(dispatched[0])
    visitor_frames = await frames_until_end(comm, timeout=20)
    await comm.disconnect()
    return visitor_frames, runner_frames


@pytest.mark.parametrize("kind", ["widget", "page"])
async def test_a_real_runs_thinking_and_tool_data_never_reach_the_visitor(
    files_agent, builder, dispatched, thinking_tool_model, kind
):
    embed = await database_sync_to_async(factories.embed)(
        files_agent, kind=kind, created_by=builder, **({"allowed_origins": [SHOP]} if kind == "widget" else {})
    )
    visitor, runner = await visit_and_run(embed, dispatched)

    produced = json.dumps(runner)
    assert THOUGHT in produced and ZONE in produced  # the runner emitted both: the control
    assert {"thinking_delta", "tool_call", "tool_result"} <= {f["type"] for f in runner}
    seen = json.dumps(visitor)
    assert THOUGHT not in seen and "thinking" not in seen
    assert ZONE not in seen  # neither the call's arguments nor its result
    assert "tool_result" not in {f["type"] for f in visitor}
    tool_calls = [f for f in visitor if f["type"] == "tool_call"]
    assert tool_calls == [{"type": "tool_call", "data": {"tool_call_id": "t1", "tool_name": "glob"}}]
    answer = "".join(f["data"]["content"] for f in visitor if f["type"] == "text_delta")
    assert answer == "It is evening there."
    assert visitor[-1] == {"type": "complete", "data": {"run_id": str(dispatched[0])}}  # no usage, no cost: its run only
    # The run really called the tool (its row holds what the visitor was not shown).
    call = await database_sync_to_async(ToolCall.objects.get)(run_id=dispatched[0])
    assert call.tool_name == "glob" and ZONE in json.dumps(call.args)


async def test_with_steps_hidden_a_real_run_shows_the_visitor_only_its_answer(
    files_agent, builder, dispatched, thinking_tool_model
):
    embed = await database_sync_to_async(factories.embed)(
        files_agent, kind="widget", created_by=builder, allowed_origins=[SHOP], show_tool_steps=False
    )
    visitor, runner = await visit_and_run(embed, dispatched)
    assert '"glob"' in json.dumps(runner)
    assert '"glob"' not in json.dumps(visitor) and ZONE not in json.dumps(visitor)
    assert not {"tool_call", "call_tools_start", "tool_result"} & {f["type"] for f in visitor}
    assert "".join(f["data"]["content"] for f in visitor if f["type"] == "text_delta") == "It is evening there."
