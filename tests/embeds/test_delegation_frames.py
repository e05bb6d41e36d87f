"""No delegation frame on an embed socket: the runner sends none for an embed run (tests/capabilities/
test_subagents.py), and should one reach the run's group anyway, the socket's filter drops it — the panel
names the organization's delegates, what each was asked and what it cost."""

from __future__ import annotations

import json

import pytest

from tests.embeds.conftest import frames_until_end
from tests.embeds.test_socket_turns import ask, open_socket, publish

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_delegation_panels_frames_never_leave_the_embed_socket(widget, dispatched):
    comm = await open_socket(widget)
    run_id = await ask(comm, dispatched)
    await publish(run_id, "model_request_start")
    await publish(run_id, "subagent_started", task_id="t1", parent_task_id=None, depth=1, name="pricing-analyst",
                  kind="agent", agent_id="a-1", task="Internal margin for Poland", mode="sync")
    await publish(run_id, "subagent_delta", task_id="t1", depth=1, part_type="text", content="Margin is 41%")
    await publish(run_id, "subagent_tool_call", task_id="t1", depth=1, tool_call_id="c1", tool_name="sql",
                  args={"q": "select margin"})
    await publish(run_id, "subagent_tool_result", task_id="t1", depth=1, tool_call_id="c1", ok=True, content="41")
    await publish(run_id, "subagent_finished", task_id="t1", depth=1, status="completed",
                  usage={"cost_usd": "0.0100"})
    await publish(run_id, "part_start", index=0, part_type="text")
    await publish(run_id, "text_delta", index=0, content="Yes, we ship to Poland.")
    await publish(run_id, "final_result", output="Yes, we ship to Poland.")
    await publish(run_id, "complete", run_id=run_id, status="completed", usage={})
    frames = await frames_until_end(comm)
    assert not [f for f in frames if f["type"].startswith("subagent")]
    seen = json.dumps(frames)
    assert "pricing-analyst" not in seen and "41%" not in seen and "margin" not in seen.lower()
    assert [f["type"] for f in frames][-1] == "complete"
    assert "Yes, we ship to Poland." in seen
    await comm.disconnect()
