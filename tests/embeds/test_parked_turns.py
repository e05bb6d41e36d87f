"""A widget conversation with an approval-gated tool, through the real consumer and the real runner.

A visitor's turn that parks ends cleanly (the parked `final_result`, then an `error` saying a person must
decide), the next message is answered instead of parking again, and the approval queue holds one pending
approval for the call, never a copy per later message. The model is scripted the way a real one behaves:
it asks for the call again unless it is told the call is already waiting."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Message, Run, RunStatus, ToolCall
from agents.runner import execute_collecting
from embeds.frames import PARKED_MESSAGE
from governance.models import Approval
from tests import factories
from tests.embeds.conftest import SHOP, communicator, frames_until_end, next_frame, wait_for
from tests.runner.test_execute import CHART_ARGS

pytestmark = pytest.mark.django_db(transaction=True)

WAITING = "Waiting for a person's decision"


@pytest.fixture
def gated_agent(org, owner):
    return factories.published_agent(
        org, owner, name="Chart Helper",
        capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}],
    )


@pytest.fixture
def insistent_model(scripted_model):
    """Draws the chart the visitor asked for — unless its instructions say that call already waits for a
    person, as a model reading an unanswered request in its history would ask for it again."""
    seen: list[str] = []

    async def stream(messages, info: AgentInfo):
        instructions = info.instructions or ""
        seen.append(instructions)
        if WAITING in instructions:
            yield "Your chart is waiting for a person's decision. Anything else?"
            return
        yield "Drawing it."
        yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART_ARGS), tool_call_id=f"c{len(seen)}")}

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    return seen


async def open_widget(embed, **query):
    comm = communicator(embed.public_key, origin=SHOP, **query)
    connected, _ = await comm.connect(timeout=5)
    assert connected and (await next_frame(comm))["type"] == "ready"
    return comm


async def turn(comm, dispatched: list, text: str) -> tuple[str, list[dict]]:
    before = len(dispatched)
    await comm.send_json_to({"type": "message", "text": text})
    await wait_for(lambda: len(dispatched) > before)
    run_id = dispatched[-1]
    await database_sync_to_async(execute_collecting, thread_sensitive=False)(run_id)
    return run_id, await frames_until_end(comm, timeout=20)


def pending() -> list[tuple[str, dict]]:
    return list(Approval.objects.filter(status="pending").values_list("tool_name", "args"))


async def test_a_parked_turn_ends_cleanly_and_the_next_message_is_answered_without_a_second_approval(
    gated_agent, builder, dispatched, insistent_model
):
    widget = await database_sync_to_async(factories.embed)(gated_agent, kind="widget", created_by=builder)
    comm = await open_widget(widget)

    first, frames = await turn(comm, dispatched, "Chart our sales please.")
    run = await database_sync_to_async(Run.objects.get)(pk=first)
    assert run.status == RunStatus.AWAITING_APPROVAL
    # The spec's parked ending: final_result empty, then the error; no complete, nothing of the call.
    assert frames[-2:] == [
        {"type": "final_result", "data": {"output": ""}},
        {"type": "error", "data": {"message": PARKED_MESSAGE, "code": "needs_approval"}},
    ]
    assert "tool_approval_required" not in {f["type"] for f in frames} and "Sales" not in json.dumps(frames)
    assert await database_sync_to_async(pending)() == [("create_chart", CHART_ARGS)]

    second, frames = await turn(comm, dispatched, "Any news? Also, do you ship to Poland?")
    # Not parked again: the call is not asked for a second time, and the visitor gets an answer.
    assert await database_sync_to_async(pending)() == [("create_chart", CHART_ARGS)]
    assert frames[-1] == {"type": "complete", "data": {"run_id": str(second)}}
    answer = "".join(f["data"]["content"] for f in frames if f["type"] == "text_delta")
    assert answer == "Your chart is waiting for a person's decision. Anything else?"
    # The model was told which call waits, with its arguments; the visitor was not.
    told = insistent_model[-1]
    assert WAITING in told and "create_chart" in told and '"title": "Sales"' in told
    assert WAITING not in json.dumps(frames)

    third, frames = await turn(comm, dispatched, "And a third message.")
    assert frames[-1]["type"] == "complete"
    # One pending approval for the one call, however many messages followed it.
    assert await database_sync_to_async(pending)() == [("create_chart", CHART_ARGS)]
    statuses = await database_sync_to_async(
        lambda: dict(Run.objects.filter(pk__in=[first, second, third]).values_list("pk", "status"))
    )()
    assert sorted(statuses.values()) == ["awaiting_approval", "completed", "completed"]
    # The parked run keeps its transcript; later turns record the visitor's words only.
    users = await database_sync_to_async(
        lambda: list(Message.objects.filter(run__embed_id=widget.pk, role="user").order_by("id")
                     .values_list("content", flat=True))
    )()
    assert users == ["Chart our sales please.", "Any news? Also, do you ship to Poland?", "And a third message."]
    assert await database_sync_to_async(ToolCall.objects.filter(run_id=first, status="parked").count)() == 1
    # The parked turn's error no longer invites the visitor to ask again (that is what piled calls up).
    assert "try again later" not in PARKED_MESSAGE.lower()
    await comm.disconnect()


async def test_once_the_call_is_decided_the_model_is_no_longer_told_it_waits(
    gated_agent, builder, owner, org, dispatched, insistent_model
):
    widget = await database_sync_to_async(factories.embed)(gated_agent, kind="widget", created_by=builder)
    comm = await open_widget(widget)
    first, _ = await turn(comm, dispatched, "Chart our sales please.")

    def reject():
        from governance import services as governance
        from tests.runner.conftest import actor_of

        governance.decide_approval(actor=actor_of(owner, org), approval=Approval.objects.get(run_id=first),
                                   decision="reject")

    await database_sync_to_async(reject)()
    # The run is still parked (nobody resumed it) but nothing of it waits for a decision any more.
    _, frames = await turn(comm, dispatched, "Try the chart again.")
    assert WAITING not in insistent_model[-1]
    assert frames[-1]["data"]["code"] == "needs_approval"  # a new call, a new decision
    assert await database_sync_to_async(Approval.objects.filter(status="pending").count)() == 1
    await comm.disconnect()


async def test_another_visitors_waiting_call_is_never_told_to_this_visitor(
    gated_agent, builder, dispatched, insistent_model
):
    widget = await database_sync_to_async(factories.embed)(gated_agent, kind="widget", created_by=builder)
    first_visitor = await open_widget(widget)
    await turn(first_visitor, dispatched, "Chart our sales please.")
    await first_visitor.disconnect()

    stranger = await open_widget(widget)
    _, frames = await turn(stranger, dispatched, "Hello, what can you do?")
    # Their own conversation: no word of the first visitor's call reached the model for them.
    assert WAITING not in insistent_model[-1] and "Sales" not in insistent_model[-1]
    assert frames[-1]["data"]["code"] == "needs_approval"  # the model, not told, drew for them: their own call
    assert await database_sync_to_async(Approval.objects.filter(status="pending").count)() == 2
    await stranger.disconnect()


async def test_a_call_waiting_in_another_organization_is_never_told_to_a_visitor_here(
    gated_agent, builder, outsider, outsider_org, dispatched, insistent_model
):
    from tests.embeds.conftest import FRONTEND

    visitor = "ab" * 16  # the same continuity key on both organizations' pages
    theirs = await database_sync_to_async(
        lambda: factories.embed(
            factories.published_agent(outsider_org, outsider, name="Their Charts",
                                      capabilities=[{"id": "charts", "tool_approval": {"create_chart": "required"}}]),
            kind="page", created_by=outsider,
        )
    )()
    ours = await database_sync_to_async(factories.embed)(gated_agent, kind="page", created_by=builder)

    async def page_turn(embed, text):
        comm = communicator(embed.public_key, origin=FRONTEND, visitor=visitor)
        connected, _ = await comm.connect(timeout=5)
        assert connected and [(await next_frame(comm))["type"] for _ in range(2)] == ["ready", "history"]
        _, frames = await turn(comm, dispatched, text)
        await comm.disconnect()
        return frames

    await page_turn(theirs, "Chart their sales.")
    assert insistent_model[-1].count(WAITING) == 0
    frames = await page_turn(ours, "Chart our sales.")
    # Our page's conversation is its own: nothing of the other organization's waiting call reached the model.
    assert WAITING not in insistent_model[-1]
    assert frames[-1]["data"]["code"] == "needs_approval"
    by_org = await database_sync_to_async(
        lambda: sorted(Approval.objects.filter(status="pending").values_list("organization_id", flat=True))
    )()
    assert sorted([outsider_org.pk, gated_agent.organization_id]) == by_org
