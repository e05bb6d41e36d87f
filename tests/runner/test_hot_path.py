"""A web turn's database work is bounded (bench/turn_overhead.py measures what each statement costs), and the
ledger stays whole when the last response's spend rides in the run's closing transaction."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from decimal import Decimal
from unittest import mock

import pytest
from celery._state import get_current_task
from django.db.backends import utils as db_utils
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Sum
from pydantic_ai.models.function import DeltaThinkingPart, FunctionModel

from agenticos.models import AuditEvent
from agents.chat import start_member_run
from agents.models import Conversation, Message, Run, RunStatus
from agents.runner import assembly, execute
from agents.runner.frames import CollectingSink
from agents.runs import start_run
from governance.models import SpendEntry
from tests import factories
from tests.fakes.openai_server import Reply
from tests.runner.conftest import actor_of, publish

PULSE = "UPDATE agents_run SET heartbeat_at = %s WHERE id = ANY"


@contextmanager
def statements():
    """Every round trip Django makes, from any thread: each SQL statement, and a COMMIT for each transaction
    (BEGIN goes with its first statement). The runner's DB work runs on its own pool, where
    CaptureQueriesContext and execute_wrapper (one connection, one thread) do not look."""
    seen: list[str] = []
    lock = threading.Lock()
    original = db_utils.CursorWrapper._execute
    original_commit = BaseDatabaseWrapper._commit

    def recording(self, sql, params, *args):
        # A Celery task running meanwhile on the session worker's threads (another test's, or this turn's own
        # after-commit work such as asking for a title) is not this turn's round trip: the runner's own pool
        # runs no task, so it is counted.
        # Nor is the runs loop's pulse: it beats every live run of the process (the session worker's too) in one
        # statement every RUN_HEARTBEAT_SECONDS, and is caught only when a turn outlasts a beat (a loaded machine).
        task = get_current_task()
        if (task is None or task.request.id is None) and not sql.startswith(PULSE):
            with lock:
                seen.append(sql)
        return original(self, sql, params, *args)

    def committing(self):
        with lock:
            seen.append("COMMIT")
        return original_commit(self)

    with mock.patch.object(db_utils.CursorWrapper, "_execute", recording), \
            mock.patch.object(BaseDatabaseWrapper, "_commit", committing):
        yield seen


def _turn(actor, agent, conversation_id=None):
    with statements() as admitted:
        run, _ = start_member_run(actor=actor, agent_id=agent.pk, text="What can you do?", surface="web",
                                  conversation_id=conversation_id, create_conversation=True)
    with statements() as executed:
        frames = CollectingSink()
        execute(run.pk, frames)
    assert frames.frames[-1]["type"] == "complete"
    return run, admitted, executed


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("organization_cap", "ledger_reads"), [(None, 0), (Decimal("100"), 1)])
def test_a_web_turn_is_admitted_and_executed_in_a_bounded_number_of_statements(org, owner, organization_cap,
                                                                               ledger_reads):
    org.monthly_budget_usd = organization_cap
    org.save()
    agent, _ = publish(org, owner)
    actor = actor_of(owner, org)
    run, admitted, executed = _turn(actor, agent)
    # The agent with its production version; then the conversation, the run and the person's message in one
    # statement (no transaction around it).
    assert len(admitted) == 2, admitted
    assert admitted[1].startswith("WITH") and "COMMIT" not in admitted
    # Take and load the run, the model profile, the history, [this month's spend against the cap], then the
    # ending in one statement: the answer, the conversation's activity, the ledger row, and the run's status
    # and totals (returning the usage for the complete frame).
    assert len(executed) == 4 + ledger_reads, executed
    assert "COMMIT" not in executed
    ending = executed[-1]
    for table in ("agents_message", "agents_conversation", "governance_spendentry", "agents_run"):
        assert table in ending
    # A later turn of the same conversation also loads it (and marks it active in the same write).
    _, admitted, executed = _turn(actor, agent, conversation_id=run.conversation_id)
    assert len(admitted) == 3, admitted
    assert len(executed) == 4 + ledger_reads, executed


@pytest.mark.django_db(transaction=True)
def test_a_turn_on_a_keyed_profile_audits_the_keys_use_inside_its_ending_statement(org, owner, fake_openai):
    """Secret access is an audit event (agenticos.secret_access): the row rides in the run's ending statement,
    so a turn whose model key is opened makes as many statements as one on the keyless demo model."""
    profile = factories.model_profile(org, "openai_compatible", "gpt-4o-mini", api_key="sk-live-hot-path-0123456789",
                                      base_url=fake_openai.base_url)
    agent, _ = publish(org, owner, model_profile_id=str(profile.pk))
    fake_openai.queue(Reply.text("Hello."))
    run, _, executed = _turn(actor_of(owner, org), agent)
    # Those of a turn on the demo model, and the month's spend a priced model is checked against; no statement
    # of the audit's own.
    assert len(executed) == 5, "\n".join(sql[:100] for sql in executed)
    assert "governance_spendentry" in executed[3] and executed[3].startswith("SELECT")
    assert ["agenticos_auditevent" in sql for sql in executed] == [False] * 4 + [True]
    assert AuditEvent.objects.filter(action="secret.used", target_id=str(profile.secret_id),
                                     details__run=str(run.pk)).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_members_turn_asks_for_grants_only_when_the_role_does_not_already_give_everything(org, owner, member):
    agent, _ = publish(org, owner)
    with statements() as as_owner:
        start_member_run(actor=actor_of(owner, org), agent_id=agent.pk, text="hi", surface="web",
                         create_conversation=True)
    with statements() as as_member:
        start_member_run(actor=actor_of(member, org), agent_id=agent.pk, text="hi", surface="web",
                         create_conversation=True)
    grant_reads = [sql for sql in as_member if "guardian_userobjectpermission" in sql]
    assert len(grant_reads) == 1
    assert not [sql for sql in as_owner if "guardian_userobjectpermission" in sql]


@pytest.mark.django_db(transaction=True)
def test_the_last_responses_spend_is_written_with_the_runs_ending(org, owner):
    agent, _ = publish(org, owner)
    run, _, _ = _turn(actor_of(owner, org), agent)
    run.refresh_from_db()
    ledger = SpendEntry.objects.filter(run=run)
    assert run.status == RunStatus.COMPLETED
    assert ledger.count() == 1 and run.requests == 1
    totals = ledger.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
    assert (run.input_tokens, run.output_tokens) == (totals["i"], totals["o"]) and run.input_tokens > 0


@pytest.mark.django_db(transaction=True)
def test_a_response_retried_after_all_has_its_spend_written_before_the_next_request(org, owner, scripted_model):
    """A response with nothing to act on (thinking only) is asked again: its spend, held for the ending, must
    not be lost or counted twice."""
    calls: list[int] = []

    async def stream(messages, info):
        calls.append(1)
        if len(calls) == 1:
            yield {0: DeltaThinkingPart(content="Let me think about it.")}
            return
        yield "Now with words."

    scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))
    agent, _ = publish(org, owner)
    run, _, _ = _turn(actor_of(owner, org), agent)
    run.refresh_from_db()
    assert len(calls) == 2
    assert run.status == RunStatus.COMPLETED and run.requests == 2
    assert SpendEntry.objects.filter(run=run).count() == 2
    assert Message.objects.get(run=run, role="assistant").content == "Now with words."
    assert Conversation.objects.filter(pk=run.conversation_id).exists()
    assert Run.objects.filter(pk=run.pk, output="Now with words.").exists()


@pytest.mark.django_db
def test_the_turns_own_message_comes_back_apart_and_later_turns_are_not_its_history(org, owner):
    """One read gives the run's own message (with its attachments) and the turns before it — not a message
    another turn of the same conversation wrote after it."""
    agent, version = publish(org, owner)
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner)
    Message.objects.bulk_create(
        Message(conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=f"turn {i}")
        for i in range(6)
    )
    run = start_run(agent=agent, version=version, surface="web", prompt="mine", user=owner, conversation=conversation,
                    attachments=[{"name": "a.txt"}], enqueue=False)
    later = start_run(agent=agent, version=version, surface="web", prompt="someone else's, later", user=owner,
                      conversation=conversation, enqueue=False)
    current, history = assembly.turn_and_history(run)
    assert current == {"id": run.user_message_id, "attachments": [{"name": "a.txt"}]}
    assert [m.parts[0].content for m in history] == [f"turn {i}" for i in range(6)]
    # The later run sees this one's message as history, and the limit keeps the newest.
    run.options = later.options = {"history_limit": 3}
    current, history = assembly.turn_and_history(later)
    assert current["id"] == later.user_message_id
    assert [m.parts[0].content for m in history] == ["turn 4", "turn 5", "mine"]
    # A run whose own message is gone reads the newest turns.
    Message.objects.filter(pk=later.user_message_id).delete()
    current, history = assembly.turn_and_history(later)
    assert current is None
    assert [m.parts[0].content for m in history] == ["turn 4", "turn 5", "mine"]
