"""Regenerate and edit in place (agents.branches): a regenerated answer is a sibling of the one it replaces, an
edited message forks the conversation there, showing another version moves the branch on screen — and the next
turn's request to the model carries exactly that branch. The API's tree says the same; nobody else can walk it."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from agenticos.errors import Conflict, NotFound
from agents import branches
from agents.chat import regenerate_answer, start_member_run
from agents.models import CompactedHistory, Conversation, Message, Run
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import run_now

pytestmark = pytest.mark.django_db(transaction=True)


def said(messages) -> list[str]:
    """What the model was sent, in order: every user prompt and answer text as "role: text"."""
    out = []
    for message in messages:
        for part in message.parts:
            if isinstance(message, ModelRequest) and isinstance(part, UserPromptPart):
                out.append(f"user: {part.content}")
            elif isinstance(message, ModelResponse) and isinstance(part, TextPart):
                out.append(f"assistant: {part.content}")
    return out


@pytest.fixture
def model(scripted_model):
    """A scripted model that answers "answer N" and keeps each request's messages."""
    requests: list[list[str]] = []

    async def stream(messages, info):
        requests.append(said(messages))
        yield f"answer {len(requests)}"

    scripted_model(FunctionModel(stream_function=stream, model_name="gpt-4o"))
    return requests


def send(actor, agent, text, conversation_id=None, **kw):
    run, admitted = start_member_run(actor=actor, agent_id=agent.pk, text=text, surface="web",
                                     conversation_id=conversation_id, create_conversation=True, **kw)
    frames = run_now(run)
    run.refresh_from_db()
    assert run.status == "completed", (run.error, frames[-3:])
    return admitted.conversation


def on_screen(conversation) -> list[str]:
    return [f"{m.role}: {m.content}" for m in Message.objects.filter(conversation=conversation, on_branch=True)]


def answers(conversation, parent_text):
    asked = Message.objects.get(conversation=conversation, role="user", content=parent_text)
    return list(Message.objects.filter(parent=asked, role="assistant").order_by("id"))


def test_regenerating_twice_keeps_the_old_answers_as_siblings_and_the_next_turn_follows_the_version_shown(
        org, owner, model):
    agent, _ = publish(org, owner)
    actor = actor_of(owner, org)
    chat = send(actor, agent, "one")
    send(actor, agent, "two", chat.pk)
    first = answers(chat, "two")[0]
    for _ in range(2):
        run, _ = regenerate_answer(actor=actor, conversation_id=chat.pk,
                                   message_id=Message.objects.filter(conversation=chat, on_branch=True).last().pk)
        run_now(run)
    versions = answers(chat, "two")
    assert [m.content for m in versions] == ["answer 2", "answer 3", "answer 4"]
    # Each regeneration asked the same question with the same history, and wrote no second question.
    assert model[2] == model[3] == ["user: one", "assistant: answer 1", "user: two"]
    assert Message.objects.filter(conversation=chat, role="user").count() == 2
    assert on_screen(chat) == ["user: one", "assistant: answer 1", "user: two", "assistant: answer 4"]
    assert branches.siblings([versions[-1]])[versions[-1].pk] == [m.pk for m in versions]

    branches.show_branch(actor=actor, conversation_id=chat.pk, message_id=first.pk)
    assert on_screen(chat) == ["user: one", "assistant: answer 1", "user: two", "assistant: answer 2"]
    send(actor, agent, "three", chat.pk)
    assert model[-1] == ["user: one", "assistant: answer 1", "user: two", "assistant: answer 2", "user: three"]
    assert Message.objects.get(content="three").parent_id == first.pk


def test_editing_a_message_forks_the_conversation_and_the_old_branch_comes_back_whole(org, owner, model):
    agent, _ = publish(org, owner)
    actor = actor_of(owner, org)
    chat = send(actor, agent, "one")
    send(actor, agent, "two", chat.pk)
    send(actor, agent, "three", chat.pk)
    two = Message.objects.get(conversation=chat, content="two")
    send(actor, agent, "two, better", chat.pk, edit_of=two.pk)
    edited = Message.objects.get(conversation=chat, content="two, better")
    assert edited.parent_id == two.parent_id
    assert model[-1] == ["user: one", "assistant: answer 1", "user: two, better"]
    assert on_screen(chat) == ["user: one", "assistant: answer 1", "user: two, better", "assistant: answer 4"]
    # The arrows back to the first version bring back what followed it.
    branches.show_branch(actor=actor, conversation_id=chat.pk, message_id=two.pk)
    assert on_screen(chat) == ["user: one", "assistant: answer 1", "user: two", "assistant: answer 2",
                               "user: three", "assistant: answer 3"]


def test_a_compacted_history_that_covers_a_message_leaving_the_branch_is_dropped(org, owner, model):
    agent, _ = publish(org, owner)
    actor = actor_of(owner, org)
    chat = send(actor, agent, "one")
    send(actor, agent, "two", chat.pk)
    newest = Message.objects.filter(conversation=chat).last()
    CompactedHistory.objects.create(conversation=chat, organization=org, messages=[], through_message_id=newest.pk)
    run, _ = regenerate_answer(actor=actor, conversation_id=chat.pk, message_id=newest.pk)
    assert not CompactedHistory.objects.filter(conversation=chat).exists()
    run_now(run)


def test_nothing_branches_while_a_run_of_the_conversation_goes_on(org, owner, model):
    agent, _ = publish(org, owner)
    actor = actor_of(owner, org)
    chat = send(actor, agent, "one")
    answer = Message.objects.get(conversation=chat, role="assistant")
    start_member_run(actor=actor, agent_id=agent.pk, text="two", surface="web", conversation_id=chat.pk,
                     create_conversation=False)  # queued, not run
    with pytest.raises(Conflict):
        regenerate_answer(actor=actor, conversation_id=chat.pk, message_id=answer.pk)
    assert Run.objects.filter(conversation=chat).count() == 2
    assert Message.objects.filter(conversation=chat, on_branch=False).count() == 0


def test_the_api_shows_the_tree_and_walks_it_for_the_owner_only(org, owner, member, viewer, outsider, outsider_org,
                                                                api_as, model):
    agent, _ = publish(org, owner)
    actor = actor_of(owner, org)
    chat = send(actor, agent, "one")
    first = Message.objects.get(conversation=chat, role="assistant")
    client = api_as(owner, org)
    regenerated = client.post(f"/api/v1/conversations/{chat.pk}/messages/{first.pk}/regenerate")
    assert regenerated.status_code == 202
    run_now(Run.objects.get(pk=regenerated.json()["run_id"]))
    tree = client.get(f"/api/v1/conversations/{chat.pk}").json()
    second = Message.objects.filter(conversation=chat, role="assistant").last()
    question = Message.objects.get(conversation=chat, role="user")
    assert tree["branch"] == [question.pk, second.pk]
    assert {(n["id"], n["parent_id"], n["on_branch"]) for n in tree["tree"]} == {
        (question.pk, None, True), (first.pk, question.pk, False), (second.pk, question.pk, True)}
    messages = client.get(f"/api/v1/conversations/{chat.pk}/messages").json()["results"]
    assert [(m["id"], m["parent_id"], m["on_branch"]) for m in messages][1:] == [
        (first.pk, question.pk, False), (second.pk, question.pk, True)]

    # Someone else — same organization, a viewer, another organization — sees and moves nothing.
    # Not theirs: 404; a viewer, who may not chat at all, 403.
    for user, their_org, code in ((member, org, 404), (viewer, org, 403), (outsider, outsider_org, 404)):
        other = api_as(user, their_org)
        assert other.get(f"/api/v1/conversations/{chat.pk}").status_code == code
        refused = other.post(f"/api/v1/conversations/{chat.pk}/branch", {"message_id": first.pk}, format="json")
        assert refused.status_code == code and set(refused.json()["error"]) >= {"code", "message"}
        again = other.post(f"/api/v1/conversations/{chat.pk}/messages/{second.pk}/regenerate")
        assert again.status_code == code
    assert Message.objects.get(pk=second.pk).on_branch and Run.objects.filter(conversation=chat).count() == 2

    moved = client.post(f"/api/v1/conversations/{chat.pk}/branch", {"message_id": first.pk}, format="json")
    assert moved.status_code == 200 and moved.json()["branch"] == [question.pk, first.pk]
    foreign = Conversation.objects.create(organization=org, agent=agent, owner=member)
    assert client.post(f"/api/v1/conversations/{foreign.pk}/branch", {"message_id": first.pk},
                       format="json").status_code == 404
    with pytest.raises(NotFound):
        branches.show_branch(actor=actor, conversation_id=chat.pk, message_id=10**12)
