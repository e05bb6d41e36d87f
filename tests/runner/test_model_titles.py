"""Titles a model writes after a conversation's first exchange (agents.titles): on the profile the operator picked in
Settings → Chat (none: no call, the first message's words stay), through the one metered path (a "title" row in
the ledger; a used-up budget calls nothing), cleaned to one plain line; a person's title is never replaced; and
the first message's words keep identifiers whole (`create_chart` is not emphasis)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from agents import titles
from agents.chat import rename_conversation, start_member_run
from agents.models import ChatSettings, ModelProfile
from governance.models import SpendEntry
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import run_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def title_model(monkeypatch, scripted_model):
    """The title profile's model, scripted: it answers a title with the marks a model adds, and keeps what it read.
    The agent's own runs answer from their own scripted model."""
    asked: list[str] = []

    async def agent_answers(messages, info):
        yield "Owls are birds of prey."

    scripted_model(FunctionModel(stream_function=agent_answers, model_name="gpt-4o"))

    def answer(messages, info):
        asked.append(messages[-1].parts[-1].content)
        return ModelResponse(parts=[TextPart(content='"**Owl facts for beginners.**"\nSure, here it is.')])

    monkeypatch.setattr("agents.providers.build_model", lambda profile: FunctionModel(answer, model_name="gpt-4o-mini"))
    return asked


@pytest.fixture
def queued(monkeypatch):
    """The title task as the runner's hook enqueues it (its arguments), run by the test."""
    calls: list[tuple] = []
    monkeypatch.setattr("agents.tasks.write_title.delay", lambda *args: calls.append(args))
    return calls


def first_exchange(org, owner, agent, text="Tell me about owls"):
    run, admitted = start_member_run(actor=actor_of(owner, org), agent_id=agent.pk, text=text, surface="web",
                                     create_conversation=True)
    run_now(run)
    return run, admitted.conversation


def pick(org, label="Cheap"):
    profile = ModelProfile.objects.create(organization=org, label=label, provider="openai", model="gpt-4o-mini")
    ChatSettings.objects.create(organization=org, title_profile=profile)
    return profile


def test_the_first_exchange_is_titled_by_the_picked_model_through_the_metered_path(org, owner, title_model, queued):
    agent, _ = publish(org, owner)
    pick(org)
    run, conversation = first_exchange(org, owner, agent)
    assert queued == [(str(conversation.pk), str(run.pk))]  # the hook asked once the first answer was written
    assert titles.write_title(*queued[0]) == "written"
    conversation.refresh_from_db()
    assert (conversation.title, conversation.title_by) == ("Owl facts for beginners", "model")
    assert "The person: Tell me about owls" in title_model[0] and "The assistant:" in title_model[0]
    entry = SpendEntry.objects.get(kind="title")
    assert entry.agent_id == agent.pk and entry.organization_id == org.pk
    # The second turn asks nothing.
    second, _ = start_member_run(actor=actor_of(owner, org), agent_id=agent.pk, text="More", surface="web",
                                 conversation_id=conversation.pk, create_conversation=False)
    run_now(second)
    assert len(queued) == 1


def test_without_a_picked_profile_nothing_is_called_and_the_first_words_stay(org, owner, title_model, queued):
    agent, _ = publish(org, owner)
    _run, conversation = first_exchange(org, owner, agent, text="CALL create_chart with **bold** data")
    assert titles.write_title(*queued[0]) == "off"
    conversation.refresh_from_db()
    assert (conversation.title, conversation.title_by) == ("CALL create_chart with bold data", "")
    assert title_model == [] and not SpendEntry.objects.filter(kind="title").exists()


def test_a_persons_title_is_never_replaced(org, owner, title_model, queued):
    agent, _ = publish(org, owner)
    pick(org)
    _run, conversation = first_exchange(org, owner, agent)
    rename_conversation(actor=actor_of(owner, org), conversation_id=conversation.pk, title="Birds, mine")
    assert titles.write_title(*queued[0]) == "kept"
    conversation.refresh_from_db()
    assert (conversation.title, conversation.title_by) == ("Birds, mine", "person")
    assert title_model == []


def test_a_used_up_budget_calls_no_model_for_a_title(org, owner, title_model, queued):
    agent, _ = publish(org, owner)
    pick(org)
    _run, conversation = first_exchange(org, owner, agent)
    org.monthly_budget_usd = Decimal("0")
    org.save()
    assert titles.write_title(*queued[0]) == "refused"
    assert title_model == [] and not SpendEntry.objects.filter(kind="title").exists()
    conversation.refresh_from_db()
    assert conversation.title_by == ""
