"""What a visitor's surface replays when it reopens (embeds.services.history_messages, sent as `history` to a
page and a widget): the same parts a live turn draws, filtered by the same toggles as the live frames — and a
chart's spec, never the raw result, when results are hidden (embeds.frames)."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents.models import Message, Run, ToolCall
from embeds import services
from embeds.frames import Toggles, TurnFilter
from tests import factories
from tests.embeds.conftest import FRONTEND, SHOP, communicator, next_frame

pytestmark = pytest.mark.django_db(transaction=True)

VISITOR = "cd" * 16
CHART = {"kind": "chart", "version": 1, "chart_type": "bar", "title": "Sales", "x_label": "", "y_label": "",
         "x_values": ["Q1", "Q2"], "series": [{"name": "EU", "values": [3, 5]}], "internal_note": "ROW 7 SECRET"}


def seed_thread(embed) -> None:
    """One visitor turn: reasoning, a lookup with internal arguments and result, a chart, then the answer."""
    conversation = services.get_or_create_conversation(embed, VISITOR)
    run = Run.objects.create(organization_id=embed.organization_id, agent=embed.agent, surface="embed",
                             version=embed.agent.environments.get(name="production").version,
                             prompt="Chart my sales", conversation=conversation, status="completed", embed_id=embed.pk)
    Message.objects.create(conversation=conversation, run=run, role="user", content="Chart my sales",
                           attachments=[{"file_id": "f1", "name": "sales.csv", "mime": "text/csv", "size": 12,
                                         "path": "embeds/uploads/INTERNAL-PATH.csv"}])
    first = Message.objects.create(
        conversation=conversation, run=run, role="assistant", content="Here is the chart.", thinking="SECRET THOUGHT",
        parts=[{"type": "thinking", "text": "SECRET THOUGHT"}, {"type": "text", "text": "Here is the chart."},
               {"type": "tool", "tool_call_id": "c1"}, {"type": "tool", "tool_call_id": "c2"}])
    ToolCall.objects.create(run=run, message=first, tool_call_id="c1", tool_name="lookup_sales",
                            args={"dsn": "INTERNAL ARGS"}, result={"row": "INTERNAL RESULT"}, status="ok")
    ToolCall.objects.create(run=run, message=first, tool_call_id="c2", tool_name="create_chart",
                            args={"title": "Sales"}, result=CHART, status="ok")
    # The same run's continuation is the same turn.
    Message.objects.create(conversation=conversation, run=run, role="assistant", content="Sales grew.",
                           parts=[{"type": "text", "text": "Sales grew."}])


async def replayed(embed, origin: str) -> list[dict]:
    comm = communicator(embed.public_key, origin=origin, visitor=VISITOR)
    connected, _ = await comm.connect(timeout=3)
    assert connected
    assert (await next_frame(comm))["type"] == "ready"
    history = await next_frame(comm)
    assert history["type"] == "history"
    assert await comm.receive_nothing(timeout=0.2)
    await comm.disconnect()
    return history["data"]["messages"]


async def test_a_widget_replays_steps_and_the_chart_but_never_arguments_results_or_reasoning(agent, builder):
    widget = await database_sync_to_async(factories.embed)(agent, kind="widget", created_by=builder)
    await database_sync_to_async(seed_thread)(widget)
    messages = await replayed(widget, SHOP)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    # The visitor's own files are named on their turn; where they are stored never travels.
    assert messages[0]["attachments"] == [{"name": "sales.csv", "mime": "text/csv", "size": 12}]
    turn = messages[1]
    assert [p["type"] for p in turn["parts"]] == ["text", "tool", "tool", "text"]
    lookup, chart = turn["parts"][1]["call"], turn["parts"][2]["call"]
    assert lookup == {"id": "c1", "name": "lookup_sales", "args": {}, "result": None, "status": "ok"}
    # The chart is the answer: its spec travels, rebuilt from the chart's own fields.
    assert chart["args"] == {} and chart["result"] == {k: v for k, v in CHART.items() if k != "internal_note"}
    sent = json.dumps(messages)
    assert "INTERNAL" not in sent and "SECRET" not in sent


async def test_a_page_showing_results_and_reasoning_replays_them(agent, builder):
    page = await database_sync_to_async(factories.embed)(agent, kind="page", created_by=builder, show_tool_steps=True,
                                                         show_tool_results=True, show_thinking=True)
    await database_sync_to_async(seed_thread)(page)
    turn = (await replayed(page, FRONTEND))[1]
    assert [p["type"] for p in turn["parts"]] == ["thinking", "text", "tool", "tool", "text"]
    lookup = turn["parts"][2]["call"]
    assert lookup["args"] == {"dsn": "INTERNAL ARGS"} and lookup["result"] == {"row": "INTERNAL RESULT"}


async def test_a_page_hiding_steps_replays_only_the_answer(agent, builder):
    page = await database_sync_to_async(factories.embed)(agent, kind="page", created_by=builder, show_tool_steps=False,
                                                         show_tool_results=False)
    await database_sync_to_async(seed_thread)(page)
    turn = (await replayed(page, FRONTEND))[1]
    assert turn["parts"] == [{"type": "text", "text": "Here is the chart."}, {"type": "text", "text": "Sales grew."}]


async def test_another_visitors_key_replays_nothing(agent, builder):
    widget = await database_sync_to_async(factories.embed)(agent, kind="widget", created_by=builder)
    await database_sync_to_async(seed_thread)(widget)
    comm = communicator(widget.public_key, origin=SHOP, visitor="ef" * 16)
    await comm.connect(timeout=3)
    await next_frame(comm)
    assert await next_frame(comm) == {"type": "history", "data": {"messages": []}}
    await comm.disconnect()


def test_the_history_costs_three_queries_whatever_its_length(agent, builder, django_assert_num_queries):
    page = factories.embed(agent, kind="page", created_by=builder)
    for _ in range(3):
        seed_thread(page)
    conversation = services.find_conversation(page, VISITOR)
    # The messages, the visitor's ratings, the tool calls of the steps shown.
    with django_assert_num_queries(3):
        assert len(services.history_messages(conversation, page)) == 6


def live(toggles: Toggles, tool_name: str, result) -> list[dict]:
    f = TurnFilter(toggles)
    f.apply({"type": "tool_call", "data": {"tool_call_id": "c1", "tool_name": tool_name, "args": {"a": "ARGS"}}})
    return f.apply({"type": "tool_result", "data": {"tool_call_id": "c1", "content": result}})


def test_a_chart_reaches_a_visitor_live_when_results_are_hidden_and_nothing_else_does():
    hidden = Toggles(show_tool_steps=True, show_tool_results=False)
    spec = {k: v for k, v in CHART.items() if k != "internal_note"}
    assert live(hidden, "create_chart", CHART) == [{"type": "tool_result", "data": {"tool_call_id": "c1",
                                                                                    "content": spec}}]
    assert live(hidden, "lookup_sales", CHART) == []  # chart-shaped output of another tool is its raw result
    assert live(hidden, "create_chart", {"error": "INTERNAL"}) == []
    assert live(Toggles(show_tool_steps=False), "create_chart", CHART) == []  # no step to draw it under
    shown = Toggles(show_tool_steps=True, show_tool_results=True)
    assert live(shown, "create_chart", CHART)[0]["data"]["content"] == CHART


def test_a_resumed_turn_reaches_a_visitor_under_the_same_toggles_as_its_live_frames():
    """A lost worker's run goes on elsewhere: the visitor's turn is redrawn from the checkpoint's parts — the text
    always, reasoning and steps only when shown, a step by its id and the name this socket was told, never its
    arguments or result — and the lost half no longer counts as an answer."""
    parts = [{"type": "thinking", "text": "SECRET-REASONING"}, {"type": "text", "text": "Let me look."},
             {"type": "tool", "tool_call_id": "c1"}]

    def resumed(toggles: Toggles) -> dict:
        f = TurnFilter(toggles)
        f.apply({"type": "tool_call", "data": {"tool_call_id": "c1", "tool_name": "lookup_order",
                                                "args": {"order": "INTERNAL-ARG"}}})
        f.apply({"type": "text_delta", "data": {"index": 0, "content": "the lost half"}})
        [out] = f.apply({"type": "resumed", "data": {"run_id": "r", "from_step": 1, "parts": parts}})
        assert out["type"] == "resumed" and set(out["data"]) == {"parts"}
        return out["data"]

    shown = resumed(Toggles(show_tool_steps=True, show_tool_results=True, show_thinking=True))
    assert shown["parts"] == [{"type": "thinking", "text": "SECRET-REASONING"}, {"type": "text", "text": "Let me look."},
                              {"type": "tool", "tool_call_id": "c1", "tool_name": "lookup_order"}]
    hidden = resumed(Toggles(show_tool_steps=False))
    assert hidden["parts"] == [{"type": "text", "text": "Let me look."}]
    assert "INTERNAL-ARG" not in json.dumps(shown)
    # Only text of the checkpoint is an answer: a turn redrawn empty that then ends says so, not a blank bubble.
    f = TurnFilter(Toggles())
    f.apply({"type": "text_delta", "data": {"index": 0, "content": "the lost half"}})
    f.apply({"type": "resumed", "data": {"parts": []}})
    assert f.apply({"type": "complete", "data": {"status": "completed"}})[0]["data"]["code"] == "empty_turn"
