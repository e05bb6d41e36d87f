"""A triggered run has its creator's authority, not their identity: memory opens only when it runs as its
creator (a schedule reads and writes, an event only reads), conversation search never does, ask_user has
nobody to ask; and the answer lands in the creator's conversation when that is where it goes."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from agenticos.models import Membership
from agents.models import Conversation, Message, Run, RunStatus
from knowledge.models import MemoryNote
from tests.runner.conftest import actor_of
from tests.triggers.conftest import make_trigger, run_now
from triggers import firing
from triggers.hooks import sign

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = [("read_memory", {"name": "todo.md"}), ("write_memory", {"name": "log.md", "content": "ran"}),
         ("search_conversations", {"query": "pricing"})]


def _note(agent, user, name="todo.md", content="water the plants"):
    return MemoryNote.objects.create(organization_id=agent.organization_id, agent=agent, owner_user=user,
                                     name=name, content=content)


def _fire_schedule(org, owner, agent, **data) -> Run:
    trigger, _ = make_trigger(owner, org, agent, **data)
    return firing.fire_now(actor=actor_of(owner, org), trigger=trigger).run


def _fire_event(org, owner, agent, **data) -> Run:
    trigger, secret = make_trigger(owner, org, agent, kind="event", **data)
    stamp, body = str(int(time.time())), b'{"order": 1}'
    response = Client().post(f"/api/v1/hooks/{trigger.key}", data=body, content_type="application/json",
                             HTTP_X_AGENTICOS_TIMESTAMP=stamp, HTTP_X_AGENTICOS_SIGNATURE=sign(secret, stamp, body))
    assert response.status_code == 202
    return Run.objects.get(pk=response.json()["run_id"])


def _history_conversation(agent, owner):
    conversation = Conversation.objects.create(organization_id=agent.organization_id, agent=agent, owner=owner,
                                               title="Pricing talk")
    Message.objects.create(conversation=conversation, role="user", author=owner, content="our pricing is 12%")


def test_a_schedule_running_as_its_creator_reads_and_writes_their_memory_but_never_searches_conversations(
        org, owner, agent, script):
    _note(agent, owner)
    _history_conversation(agent, owner)
    scripted = script(TOOLS)
    run_now(_fire_schedule(org, owner, agent, run_as_creator=True).pk)
    read, wrote, searched = scripted.returns
    assert read == "water the plants" and wrote.startswith("Saved new note")
    assert searched.startswith("Refused") and "12%" not in searched
    assert MemoryNote.objects.filter(owner_user=owner, name="log.md", content="ran").exists()


def test_an_event_running_as_its_creator_only_reads_their_memory(org, owner, agent, script):
    _note(agent, owner)
    _history_conversation(agent, owner)
    scripted = script(TOOLS)
    run_now(_fire_event(org, owner, agent, run_as_creator=True).pk)
    read, wrote, searched = scripted.returns
    assert read == "water the plants"
    assert wrote.startswith("Refused") and searched.startswith("Refused") and "12%" not in searched
    assert not MemoryNote.objects.filter(name="log.md").exists()


@pytest.mark.parametrize("kind", ["schedule", "event"])
def test_without_run_as_creator_memory_refuses_and_nothing_is_saved(org, owner, agent, script, kind):
    _note(agent, owner)
    scripted = script(TOOLS[:2])
    run = _fire_schedule(org, owner, agent) if kind == "schedule" else _fire_event(org, owner, agent)
    run_now(run.pk)
    read, wrote = scripted.returns
    assert read.startswith("Refused") and "water" not in read and "schedule or an event trigger" in read
    assert wrote.startswith("Refused")
    assert not MemoryNote.objects.filter(name="log.md").exists()


def test_ask_user_gets_no_answer_and_the_run_does_not_park(org, owner, agent, script):
    question = {"questions": [{"header": "Colour", "question": "Which colour?",
                               "options": [{"label": "Red"}, {"label": "Blue"}]}]}
    scripted = script([("ask_user_question", question)])
    run = _fire_schedule(org, owner, agent, run_as_creator=True)
    run_now(run.pk)
    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED
    assert scripted.returns and "Red" not in scripted.returns[0]


def test_the_answer_goes_to_the_creators_conversation_in_their_chat_list(api_as, org, owner, agent, script):
    script()
    run = _fire_schedule(org, owner, agent, delivery="conversation")
    run_now(run.pk)
    conversation = Conversation.objects.get(pk=run.conversation_id)
    assert (conversation.owner_id, conversation.title) == (owner.pk, "Nightly")
    roles = list(conversation.messages.order_by("id").values_list("role", "content"))
    assert roles == [("user", "Write the nightly report."), ("assistant", "done")]
    listed = api_as(owner, org).get("/api/v1/conversations").json()
    assert str(conversation.pk) in str(listed)


def test_a_creator_who_lost_access_fires_nothing_by_hand_either(api_as, org, owner, admin_user, agent):
    trigger, _ = make_trigger(admin_user, org, agent)
    Membership.objects.filter(user=admin_user, organization=org).update(role="viewer")
    response = api_as(owner, org).post(f"/api/v1/triggers/{trigger.pk}/fire")
    assert response.status_code == 409 and "no longer" in response.json()["error"]["message"]
    assert not Run.objects.exists()


def test_a_gated_tool_parks_the_triggered_run_into_approvals(org, owner, script):
    from governance.models import Approval
    from tests import factories

    gated = factories.published_agent(org, owner, name="Gated",
                                      capabilities=[{"id": "charts", "approval": "required"}])
    script([("create_chart", {"chart_type": "bar", "title": "t", "x_values": ["a"],
                               "series": [{"name": "s", "values": [1]}]})])
    run = _fire_schedule(org, owner, gated)
    run_now(run.pk)
    assert Run.objects.get(pk=run.pk).status == RunStatus.AWAITING_APPROVAL
    approval = Approval.objects.get(run=run)
    assert approval.tool_name == "create_chart" and approval.status == "pending"
