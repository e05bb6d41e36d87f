"""`agenticos.queries`: several writes in one statement, and an update that loads what it changed."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.db import IntegrityError
from django.db.models import F

from agenticos.queries import Insert, Update, returned, update_then_load, write_together
from agents.models import Conversation, Message, Run, RunStatus, ToolCall
from tests.runner.conftest import publish


def _run(org, agent, version, **fields) -> Run:
    return Run(organization=org, agent=agent, version=version, surface="web", prompt="p", **fields)


@pytest.mark.django_db
def test_rows_that_name_each_other_go_in_together_and_keys_come_back(org, owner):
    agent, version = publish(org, owner)
    conversation = Conversation(organization=org, agent=agent, owner=owner, title="new")
    run = _run(org, agent, version, conversation=conversation)
    message = Message(conversation=conversation, run=run, role="user", content="hello there")
    results = write_together(Insert([message]), Insert([run]), Insert([conversation]))

    assert results[0] == {"id": message.pk} and isinstance(message.pk, int)
    assert results[1] is None and results[2] is None  # keys set in Python: nothing to hand back
    assert not any(obj._state.adding for obj in (conversation, run, message))
    stored = Message.objects.select_related("run", "conversation").get(pk=message.pk)
    assert (stored.run.pk, stored.conversation.title, stored.content) == (run.pk, "new", "hello there")
    # The database's own trigger still ran on the insert (conversation search).
    assert Message.objects.filter(pk=message.pk, search_vector__isnull=False).exists()


@pytest.mark.django_db
def test_a_later_write_uses_what_an_insert_returned(org, owner):
    agent, version = publish(org, owner)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner)
    run = _run(org, agent, version, conversation=conversation)
    run.save()
    call = ToolCall.objects.create(run=run, tool_call_id="c1", tool_name="clock", args={})
    answer = Message(conversation=conversation, run=run, role="assistant", content="It is noon.")
    write_together(Insert([answer], name="answer"),
                   Update(ToolCall.objects.filter(run=run), {"message_id": returned("answer", "id")}))
    call.refresh_from_db()
    assert call.message_id == answer.pk


@pytest.mark.django_db(transaction=True)
def test_the_statement_is_all_or_nothing(org, owner):
    agent, version = publish(org, owner)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="before")
    orphan = Message(conversation_id=uuid.uuid4(), role="user", content="names a conversation that is not there")
    with pytest.raises(IntegrityError):
        write_together(Update(Conversation.objects.filter(pk=conversation.pk), {"title": "after"}),
                       Insert([_run(org, agent, version)]), Insert([orphan]))
    conversation.refresh_from_db()
    assert conversation.title == "before"
    assert not Run.objects.exists() and not Message.objects.exists()


@pytest.mark.django_db
def test_what_an_update_hands_back(org, owner):
    agent, version = publish(org, owner)
    run = _run(org, agent, version, input_tokens=5)
    run.save()
    changed, unmatched, impossible, nothing_to_set = write_together(
        Update(Run.objects.filter(pk=run.pk), {"input_tokens": F("input_tokens") + 7, "cost_usd": Decimal("0.25")},
               returning=("input_tokens", "cost_usd", "finished_at")),
        Update(Run.objects.filter(pk=uuid.uuid4()), {"status": RunStatus.FAILED}, returning=("status",)),
        Update(Run.objects.filter(pk__in=[]), {"status": RunStatus.FAILED}, returning=("status",)),
        Update(Run.objects.filter(pk=run.pk), {}),
    )
    # A NULL column of a changed row is a value; a row that did not change is None.
    assert changed == {"input_tokens": 12, "cost_usd": Decimal("0.25"), "finished_at": None}
    assert unmatched is None and impossible is None and nothing_to_set is None
    run.refresh_from_db()
    assert run.input_tokens == 12 and run.status == RunStatus.QUEUED


@pytest.mark.django_db
def test_several_rows_insert_as_one_and_misuse_is_refused(org, owner):
    agent, version = publish(org, owner)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner)
    rows = [Message(conversation=conversation, role="user", content=f"m{i}") for i in range(3)]
    assert write_together(Insert(rows)) == [None]
    assert list(Message.objects.filter(conversation=conversation).values_list("content", flat=True)) == ["m0", "m1", "m2"]
    with pytest.raises(ValueError, match="single object"):
        write_together(Insert([Message(conversation=conversation, role="user") for _ in range(2)], returning=("id",)))
    with pytest.raises(ValueError, match="lower-case"):
        write_together(Insert([Message(conversation=conversation, role="user")], name="x; DROP TABLE y"))
    with pytest.raises(ValueError, match="lower-case"):
        returned('a" FROM b', "id")
    with pytest.raises(ValueError, match="nothing to insert"):
        write_together(Insert([]))


@pytest.mark.django_db
def test_update_then_load_takes_a_row_once_and_loads_its_relations(org, owner):
    agent, version = publish(org, owner)
    run = _run(org, agent, version)
    other = _run(org, agent, version)
    write_together(Insert([run]), Insert([other]))
    take = Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED)
    load = Run.objects.select_related("agent", "version", "organization")

    taken = update_then_load(take, {"status": RunStatus.RUNNING, "input_tokens": F("input_tokens") + 1}, load)
    assert [r.pk for r in taken] == [run.pk]  # the other queued run is not in sight
    assert (taken[0].status, taken[0].input_tokens) == (RunStatus.RUNNING, 1)  # as it is after the update
    assert (taken[0].agent.name, taken[0].version.pk, taken[0].organization.pk) == (agent.name, version.pk, org.pk)
    assert update_then_load(take, {"status": RunStatus.RUNNING}, load) == []  # already taken
    assert Run.objects.get(pk=other.pk).status == RunStatus.QUEUED
    with pytest.raises(ValueError, match="one model"):
        update_then_load(take, {"status": RunStatus.RUNNING}, Message.objects.all())
