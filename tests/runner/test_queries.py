"""`agenticos.queries`: several writes in one statement, and an update that loads what it changed."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection
from django.db.models import F

from agenticos.queries import Insert, Loaded, Update, load_row, returned, write_together
from agents.models import Agent, AgentVersion, Conversation, Message, Run, RunStatus, ToolCall
from tests import factories
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
def test_a_row_of_several_models_loads_as_django_would_load_them(org, owner):
    agent, version = publish(org, owner)
    run = _run(org, agent, version, options={"history_limit": 3}, cost_usd=Decimal("0.125"))
    run.save()
    layout = (Loaded(Run, "r"), Loaded(Agent, "a", exclude=("draft_spec",)), Loaded(AgentVersion, "v"))
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(part.columns(quote) for part in layout)} FROM agents_run r"  # noqa: S608
            " JOIN agents_agent a ON a.id = r.agent_id JOIN agents_agentversion v ON v.id = r.version_id"
            " WHERE r.id = %s", [run.pk])
        loaded_run, loaded_agent, loaded_version = load_row(cursor.fetchone(), layout)
    expected = Run.objects.get(pk=run.pk)
    for field in Run._meta.concrete_fields:  # JSON decoded, decimals, dates and keys as the ORM gives them
        assert getattr(loaded_run, field.attname) == getattr(expected, field.attname), field.name
    assert loaded_run.options == {"history_limit": 3} and loaded_run.cost_usd == Decimal("0.125")
    assert loaded_version.spec == version.spec and loaded_agent.name == agent.name
    assert not loaded_run._state.adding and loaded_run._state.db == "default"
    # The excluded field is deferred: read on access, not lost.
    assert loaded_agent.get_deferred_fields() == {"draft_spec"}
    assert loaded_agent.draft_spec == Agent.objects.get(pk=agent.pk).draft_spec


@pytest.mark.django_db
def test_a_runs_model_profile_comes_with_its_key_row_and_whether_it_has_fallbacks(org, owner, outsider_org):
    from pydantic_ai.models.fallback import FallbackModel

    from agents.providers import build_model
    from agents.runner.assembly import AssemblyError, model_profile
    from agents.spec import AgentSpec

    agent, version = publish(org, owner)
    run = _run(org, agent, version)
    keyed = factories.model_profile(org, "openai", "gpt-4o-mini", api_key="sk-test-key-1234567890")
    backup = factories.model_profile(org, "openai", "gpt-4o", api_key="sk-test-key-0987654321")
    keyed.fallbacks.add(backup)
    keyless = factories.model_profile(org, "demo", "demo")

    loaded = model_profile(run, AgentSpec(name="x", model_profile_id=str(keyed.pk)))
    assert (loaded.pk, loaded.secret.pk, loaded.has_fallbacks) == (keyed.pk, keyed.secret_id, True)
    assert isinstance(build_model(loaded), FallbackModel)
    loaded = model_profile(run, AgentSpec(name="x", model_profile_id=str(keyless.pk)))
    assert (loaded.secret, loaded.has_fallbacks, loaded.settings) == (None, False, {})
    # Another organization's profile, a missing one and a malformed id read as gone.
    foreign = factories.model_profile(outsider_org, "demo", "demo")
    for wrong in (str(foreign.pk), str(uuid.uuid4()), "not-an-id"):
        with pytest.raises(AssemblyError, match="no longer exists"):
            model_profile(run, AgentSpec(name="x", model_profile_id=wrong))
