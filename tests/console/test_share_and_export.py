"""A conversation shared read-only and exported (agents.sharing, agents.export). The owner makes one link (a second
click gives the same), anyone opens it signed out and reads the branch on screen as text — no tool arguments or
results; revoked, the link is 404. Another member, a viewer and another organization's owner can neither make nor
revoke a link, and change nothing. Export: the branch as Markdown, the whole tree as JSON, for those who may read
it; others get 404."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from agenticos.models import AuditEvent
from agents import branches
from agents.models import ConversationShare, Message
from tests import factories
from tests.console.conftest import make_turn
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db

SECRET_ARG = "internal-ledger-7731"


@pytest.fixture
def chat(org, member):
    """The member's conversation: a question and an answer that called a tool with a telling argument."""
    agent = factories.published_agent(org, factories.member(org, "builder"), name="Helper")
    conversation, run = make_turn(org, member, agent, prompt="How are the books?", tools=("run_python",))
    run.tool_calls.update(args={"account": SECRET_ARG})
    return conversation


def test_the_owner_shares_and_anyone_reads_the_text_until_it_is_revoked(org, member, chat, client_as):
    owner = client_as(member, org)
    assert owner.post(f"/chat/{chat.pk}/share").status_code == 302
    assert owner.post(f"/chat/{chat.pk}/share").status_code == 302  # the same link again
    share = ConversationShare.objects.get(conversation=chat)
    page = owner.get(f"/chat/{chat.pk}/")
    assert share.token in page.content.decode()
    visitor = Client()
    opened = visitor.get(f"/shared/{share.token}/")
    assert opened.status_code == 200 and opened["Referrer-Policy"] == "no-referrer"
    body = opened.content.decode()
    assert "How are the books?" in body and SECRET_ARG not in body and "run_python" not in body
    assert AuditEvent.objects.filter(action="conversation.shared").count() == 1

    assert owner.post(f"/chat/{chat.pk}/share/revoke").status_code == 302
    assert visitor.get(f"/shared/{share.token}/").status_code == 404
    assert owner.post(f"/chat/{chat.pk}/share").status_code == 302
    assert ConversationShare.objects.get(conversation=chat, revoked_at__isnull=True).token != share.token
    assert visitor.get("/shared/not-a-token/").status_code == 404


def test_nobody_else_shares_or_revokes(org, member, viewer, outsider, outsider_org, chat, client_as):
    client_as(member, org).post(f"/chat/{chat.pk}/share")
    before = list(ConversationShare.objects.values_list("pk", "revoked_at"))
    someone = factories.member(org, "member")
    # Another member: not their conversation (404); a viewer may not run agents (403); an outsider: 404.
    for user, their_org, code in ((someone, org, 404), (viewer, org, 403), (outsider, outsider_org, 404)):
        for url in (f"/chat/{chat.pk}/share", f"/chat/{chat.pk}/share/revoke"):
            assert client_as(user, their_org).post(url).status_code == code, (user, url)
    assert list(ConversationShare.objects.values_list("pk", "revoked_at")) == before


def test_export_gives_the_branch_as_markdown_and_the_tree_as_json(org, member, viewer, outsider, outsider_org, chat,
                                                                  client_as):
    answer = Message.objects.filter(conversation=chat, role="assistant").first()
    other = Message.objects.create(conversation=chat, role="assistant", content="A second version.",
                                   parent_id=answer.parent_id, on_branch=False)
    branches.show_branch(actor=actor_of(member, org), conversation_id=chat.pk, message_id=other.pk)
    markdown = client_as(member, org).get(f"/chat/{chat.pk}/export.md")
    assert markdown.status_code == 200 and markdown["Content-Type"].startswith("text/markdown")
    text = markdown.content.decode()
    assert "How are the books?" in text and "A second version." in text and answer.content not in text
    assert SECRET_ARG not in text
    tree = json.loads(client_as(member, org).get(f"/chat/{chat.pk}/export.json").content)
    assert {m["id"] for m in tree["messages"]} >= {answer.pk, other.pk}
    assert other.pk in tree["branch"] and answer.pk not in tree["branch"]
    assert SECRET_ARG not in json.dumps(tree)
    assert client_as(member, org).get(f"/chat/{chat.pk}/export.pdf").status_code == 404
    someone = factories.member(org, "member")
    for user, their_org in ((someone, org), (outsider, outsider_org)):
        assert client_as(user, their_org).get(f"/chat/{chat.pk}/export.md").status_code == 404
