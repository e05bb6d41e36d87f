"""A conversation reopened while its last turn is answered: the transcript the page draws says the turn is still
going (so web chat follows it live), and a turn that ends while the transcript is read never leaves the page with
neither its answer nor that mark (console.selectors.conversation_turns)."""

from __future__ import annotations

import pytest
from django.db import connection

from agents.models import Conversation, Message, Run
from agents.runs import start_run
from console.selectors import conversation_turns
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def turn(org, owner):
    agent = factories.published_agent(org, owner, name="Helper")
    version = agent.environments.get(name="production").version
    conversation = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="Hello")
    run = start_run(agent=agent, version=version, surface="web", prompt="Hello", user=owner, acting_role="owner",
                    conversation=conversation, enqueue=False)
    return conversation, run


def end(run: Run) -> None:
    """What the runner's ending writes: the answer and the run's status."""
    Message.objects.create(conversation_id=run.conversation_id, run=run, version=run.version, role="assistant",
                           content="Hi there.", parts=[{"type": "text", "text": "Hi there."}],
                           parent_id=run.user_message_id)
    Run.objects.filter(pk=run.pk).update(status="completed")


def test_the_persons_turn_says_its_answer_is_still_being_written(turn):
    conversation, run = turn
    [asked] = conversation_turns(conversation)
    assert asked["role"] == "user" and asked["running"] is True
    Run.objects.filter(pk=run.pk).update(status="running")
    assert conversation_turns(conversation)[0]["running"] is True
    end(run)
    asked, answered = conversation_turns(conversation)
    assert asked["running"] is False and answered["parts"] == [{"type": "text", "text": "Hi there."}]


def test_a_turn_ending_while_the_transcript_is_read_shows_its_answer_or_stays_followed(turn):
    conversation, run = turn
    ended = []

    def end_after_the_first_read(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        reads = 'FROM "agents_message"' in sql or 'FROM "agents_run"' in sql
        if reads and not ended:
            ended.append(sql)
            end(run)
        return result

    with connection.execute_wrapper(end_after_the_first_read):
        turns = conversation_turns(conversation)
    assert ended
    answered = turns[-1]["role"] == "assistant" and turns[-1]["parts"][0]["text"] == "Hi there."
    assert answered or turns[-1].get("running") is True
