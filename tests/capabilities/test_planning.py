"""planning: nine tools; the plan belongs to the conversation (Conversation.state["plan"])."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from agents.models import Agent, Conversation
from capabilities.planning import reset_in_progress_steps, stored_plan
from tests import factories
from tests.capabilities.helpers import deps, run, spec

PLANNING = spec({"id": "planning"})
ALL_NINE = [
    "add_subtask",
    "add_task",
    "get_available_tasks",
    "read_plan",
    "remove_task",
    "set_dependency",
    "update_task_status",
    "update_task_statuses",
    "write_plan",
]


@pytest.fixture
async def _close_thread_connections():
    """The store reaches the database from asgiref's worker thread; close that connection afterwards so
    the test database can be dropped."""
    yield
    from asgiref.sync import sync_to_async
    from django.db import connections

    await sync_to_async(connections.close_all)()


@pytest.fixture
def conversation(transactional_db, _close_thread_connections):
    org = factories.organization(name="Planners")
    agent = Agent.objects.create(organization=org, slug="planner", name="Planner")
    return Conversation.objects.create(organization=org, agent=agent)


def _deps(conversation: Conversation, **extra):
    return deps(
        organization_id=str(conversation.organization_id), conversation_id=str(conversation.pk), **extra
    )


def _reminders(script) -> list[str]:
    texts = []
    for message in script.sent[-1]:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
                    texts += [c for c in part.content if isinstance(c, str)]
    return texts


def _steps(*pairs):
    return {"items": [{"content": content, "status": status} for content, status in pairs]}


async def test_a_flat_plan_offers_six_tools_and_subtasks_offer_all_nine():
    flat = await run(PLANNING, [])
    assert flat.script.offered == sorted(ALL_NINE[i] for i in (1, 3, 4, 6, 7, 8))
    nested = await run(spec({"id": "planning", "config": {"enable_subtasks": True}}), [])
    assert nested.script.offered == ALL_NINE


async def test_the_plan_is_stored_on_the_conversation_and_seeded_into_the_next_turn(conversation):
    await run(
        PLANNING,
        [("write_plan", _steps(("Collect data", "in_progress"), ("Write summary", "pending")))],
        _deps(conversation),
    )
    stored = await _stored(conversation)
    assert [(s.content, s.status.value) for s in stored] == [
        ("Collect data", "in_progress"),
        ("Write summary", "pending"),
    ]

    next_turn = await run(PLANNING, [("read_plan", {})], _deps(conversation))
    assert "Collect data" in next_turn.returns[0]
    assert any("Collect data" in text for text in _reminders(next_turn.script))


async def test_a_finished_plan_is_not_seeded_but_the_row_keeps_it(conversation):
    await run(
        PLANNING,
        [("write_plan", _steps(("Collect data", "completed"), ("Old idea", "cancelled")))],
        _deps(conversation),
    )
    next_turn = await run(PLANNING, [("read_plan", {})], _deps(conversation))
    assert next_turn.returns[0].startswith("No plan yet")
    assert not any("Collect data" in text for text in _reminders(next_turn.script))
    assert len(await _stored(conversation)) == 2  # a turn that did not touch the plan wrote nothing


async def test_a_plan_with_a_blocked_step_is_still_seeded(conversation):
    subtasks = spec({"id": "planning", "config": {"enable_subtasks": True}})
    await run(
        subtasks,
        [
            (
                "write_plan",
                {
                    "items": [
                        {"id": "a1", "content": "Build", "status": "completed"},
                        {"id": "b2", "content": "Ship", "status": "blocked", "depends_on": ["c3"]},
                        {"id": "c3", "content": "Review", "status": "cancelled"},
                    ]
                },
            )
        ],
        _deps(conversation),
    )
    stored = await _stored(conversation)
    assert any(s.status.value in {"blocked", "pending"} for s in stored)
    next_turn = await run(subtasks, [("read_plan", {})], _deps(conversation))
    assert "Ship" in next_turn.returns[0]


async def test_a_new_plan_replaces_a_finished_one(conversation):
    await run(PLANNING, [("write_plan", _steps(("Old", "completed")))], _deps(conversation))
    await run(PLANNING, [("add_task", {"content": "New work"})], _deps(conversation))
    assert [s.content for s in await _stored(conversation)] == ["New work"]


async def test_a_failed_run_returns_in_progress_steps_to_pending(conversation):
    await run(
        PLANNING,
        [("write_plan", _steps(("Collect data", "in_progress"), ("Write", "pending")))],
        _deps(conversation),
    )
    from asgiref.sync import sync_to_async

    moved = await sync_to_async(reset_in_progress_steps)(str(conversation.pk))
    assert moved == 1
    assert [s.status.value for s in await _stored(conversation)] == ["pending", "pending"]


async def test_without_a_conversation_the_plan_lives_for_the_run_only(conversation):
    first = await run(PLANNING, [("add_task", {"content": "Ephemeral"}), ("read_plan", {})])
    assert "Ephemeral" in first.returns[1]
    second = await run(PLANNING, [("read_plan", {})])
    assert second.returns[0].startswith("No plan yet")
    assert await _stored(conversation) == []


async def test_another_organizations_run_cannot_see_or_write_the_plan(conversation):
    await run(PLANNING, [("write_plan", _steps(("Secret step", "pending")))], _deps(conversation))
    intruder = deps(
        organization_id="00000000-0000-0000-0000-00000000beef", conversation_id=str(conversation.pk)
    )
    outcome = await run(PLANNING, [("read_plan", {}), ("add_task", {"content": "Injected"})], intruder)
    assert outcome.returns[0].startswith("No plan yet")
    assert [s.content for s in await _stored(conversation)] == ["Secret step"]


async def _stored(conversation):
    from asgiref.sync import sync_to_async

    return await sync_to_async(stored_plan)(str(conversation.pk))
