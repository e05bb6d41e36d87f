"""A turn in a long conversation reads its newest messages by the conversation's own index, whatever the
conversations written after it (issue 39: a turn in a 10,000-message conversation ≤ 1.1× one in a 10-message one).

Ordered by `id DESC`, PostgreSQL took the primary key backwards and filtered on the conversation: it assumes a
conversation's rows are spread evenly over all ids, so the larger the conversation's share of the table, the
sooner it expects to meet 101 of them. They sit together instead, and the walk passed every message any other
conversation wrote since (measured on the bench database: 131,628 rows removed by the filter, 40 ms for the
history and 70 ms for the parent's id, against 0.2 and 0.03 ms by the index). The plan is the query's shape, so
the test reads the plan; it times nothing."""

from __future__ import annotations

import pytest
from django.db import connection

from agents import branches
from agents.models import Conversation, Message
from agents.runner.history import get_recent_messages
from tests.runner.conftest import publish

LONG, LATER = 3_000, 9_000


def _messages(conversation, count, word):
    Message.objects.bulk_create(
        (Message(conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=f"{word} {i}")
         for i in range(count)), batch_size=3_000)


@pytest.fixture
def long_conversation_then_others(org, owner):
    """A long conversation (a quarter of the table), then more messages of others; the statistics fresh, as
    autovacuum leaves them."""
    agent, _ = publish(org, owner)
    long = Conversation.objects.create(organization=org, agent=agent, owner=owner)
    _messages(long, LONG, "long")
    for _ in range(3):
        _messages(Conversation.objects.create(organization=org, agent=agent, owner=owner), LATER // 3, "other")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE agents_message")
    return long


def _plan(sql: str, params) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def _read_by_the_conversations_index(plan: str) -> None:
    assert "message_branch_newest" in plan, plan
    assert "agents_message_pkey" not in plan, plan
    assert "Rows Removed by Filter" not in plan, plan  # nothing of another conversation is read


@pytest.mark.django_db
def test_the_history_of_a_long_conversation_is_read_from_its_newest_end(long_conversation_then_others):
    long = long_conversation_then_others
    statements = []

    def recording(execute, sql, params, many, context):
        statements.append((sql, params))  # as sent, parameters apart (captured_queries has them interpolated)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(recording):
        recent = get_recent_messages(long, 101, fields=("run_id", "attachments"))
    assert [m.content for m in recent] == [f"long {i}" for i in range(LONG - 101, LONG)]
    (statement,) = statements
    _read_by_the_conversations_index(_plan(*statement))


@pytest.mark.django_db
def test_the_next_messages_parent_is_found_by_the_conversations_index(long_conversation_then_others):
    long = long_conversation_then_others
    newest = Message.objects.filter(conversation=long).order_by("id").last()
    inner = branches.leaf(long.pk).query
    rows = Message.objects.all()
    rows.query = inner
    assert list(rows) == [{"id": newest.pk}]
    _read_by_the_conversations_index(_plan(*inner.sql_with_params()))
