"""PUT/DELETE /api/v1/conversations/{id}/messages/{message_id}/feedback: the conversation's owner rates an answer
👍/👎 with an optional comment (again: replaced), stored with its run and agent; takes it back. Another member, a
viewer and another organization's owner are refused with the error envelope and leave no row; a person's message
is not an answer; a bad body is refused."""

from __future__ import annotations

import pytest

from agents.models import Feedback, Message
from tests import factories
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def turn(org, member):
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    conversation, run = make_turn(org, member, agent, prompt="Sum these", tools=())
    return conversation, run, Message.objects.get(conversation=conversation, role="assistant")


def url(conversation, message) -> str:
    return f"/api/v1/conversations/{conversation.pk}/messages/{message.pk}/feedback"


def test_the_owner_rates_an_answer_changes_it_and_takes_it_back(org, member, turn, api_as):
    conversation, run, answer = turn
    client = api_as(member, org)
    given = client.put(url(conversation, answer), {"rating": "down", "comment": "  Wrong total.  "}, format="json")
    assert given.status_code == 200
    assert given.json()["rating"] == "down" and given.json()["comment"] == "Wrong total."
    row = Feedback.objects.get()
    assert (row.run_id, row.agent_id, row.user_id, row.organization_id) == (run.pk, conversation.agent_id,
                                                                           member.pk, org.pk)
    assert client.put(url(conversation, answer), {"rating": "up"}, format="json").status_code == 200
    assert Feedback.objects.get().rating == "up" and Feedback.objects.count() == 1
    assert client.delete(url(conversation, answer)).status_code == 204
    assert not Feedback.objects.exists()


def test_nobody_else_rates_and_a_question_is_not_an_answer(org, member, viewer, outsider, outsider_org, turn, api_as):
    conversation, _run, answer = turn
    someone = factories.member(org, "member")
    # Another member: not their conversation (404); a viewer may not run agents (403); an outsider: 404.
    for user, their_org, code in ((someone, org, 404), (viewer, org, 403), (outsider, outsider_org, 404)):
        refused = api_as(user, their_org).put(url(conversation, answer), {"rating": "down"}, format="json")
        assert refused.status_code == code and set(refused.json()["error"]) >= {"code", "message"}
    question = Message.objects.get(conversation=conversation, role="user")
    assert api_as(member, org).put(url(conversation, question), {"rating": "up"}, format="json").status_code == 404
    for body in ({"rating": "meh"}, {}, {"rating": "up", "comment": "x" * 2001}):
        assert api_as(member, org).put(url(conversation, answer), body, format="json").status_code == 400
    assert not Feedback.objects.exists()
