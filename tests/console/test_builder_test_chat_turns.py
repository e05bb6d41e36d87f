"""The Builder's test chat reads its transcript back from its own endpoint (a Builder test conversation is in no
Chat list, so the list's endpoints refuse it): the editor's own draft conversation with this agent, and nothing
else — another person's, a Chat-list conversation, another agent's, another organization's are 404; a member
without edit access is refused, a viewer too."""

from __future__ import annotations

import pytest

from agents.drafts import DRAFT_CONVERSATION_KEY
from agents.models import Conversation
from tests import factories
from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db


def url(agent, conversation) -> str:
    return f"/agents/{agent.pk}/test/{conversation.pk}/turns.json"


def draft_conversation(org, user, agent):
    return Conversation.objects.create(organization=org, agent=agent, owner=user, title="Test",
                                       external_key=DRAFT_CONVERSATION_KEY)


def test_the_editor_reads_their_test_conversation_with_its_turns(client_as, org, owner, agent):
    conversation = draft_conversation(org, owner, agent)
    _c, run = make_turn(org, owner, agent, conversation=conversation, prompt="Chart it")
    response = client_as(owner, org).get(url(agent, conversation))
    assert response.status_code == 200
    body = response.json()
    assert [t["role"] for t in body["turns"]] == ["user", "assistant"]
    assert body["turns"][0]["text"] == "Chart it"
    assert body["turns"][1]["run_id"] == str(run.pk)
    assert body["pending"] == {"approvals": [], "questions": []}


def test_a_chat_list_conversation_another_agents_and_someone_elses_are_not_found(client_as, org, owner, admin_user,
                                                                                 agent):
    listed = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="Listed")
    other_agent = factories.published_agent(org, owner, name="Other")
    theirs = draft_conversation(org, admin_user, agent)
    client = client_as(owner, org)
    assert client.get(url(agent, listed)).status_code == 404
    assert client.get(url(other_agent, draft_conversation(org, owner, agent))).status_code == 404
    assert client.get(url(agent, theirs)).status_code == 404


def test_a_member_without_edit_access_and_a_viewer_are_refused(client_as, org, owner, member, viewer, agent):
    mine = draft_conversation(org, member, agent)  # even their own: trying a draft is an editor's
    assert client_as(member, org).get(url(agent, mine)).status_code == 403
    assert client_as(viewer, org).get(url(agent, draft_conversation(org, viewer, agent))).status_code == 403


def test_an_outsider_gets_not_found(client_as, org, owner, agent, outsider, outsider_org):
    conversation = draft_conversation(org, owner, agent)
    assert client_as(outsider, outsider_org).get(url(agent, conversation)).status_code == 404
    own = draft_conversation(outsider_org, outsider, factories.published_agent(outsider_org, outsider, name="F"))
    assert client_as(outsider, outsider_org).get(url(agent, own)).status_code == 404


def test_the_builder_page_carries_the_web_chat_state_for_the_draft(client_as, org, owner, member, agent):
    import json
    import re

    page = client_as(owner, org).get(f"/agents/{agent.pk}/").content.decode()
    state = json.loads(re.search(r'<script id="chat-state" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert state["test_chat"] is True and state["environment"] == "draft" and state["agent_id"] == str(agent.pk)
    assert state["urls"]["turns"] == f"/agents/{agent.pk}/test/00000000-0000-0000-0000-000000000000/turns.json"
    assert "builder-chat.js" not in page and "console/chat.js" in page and "console/turn.js" in page
    # A member who may not edit the agent has no test chat, and no state for one.
    other = client_as(member, org).get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="chat-state"' not in other and "data-test-chat" not in other
