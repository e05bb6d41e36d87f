"""PATCH /api/v1/conversations/{id}: the owner renames (a title of 1–200 characters, trimmed) and pins or unpins
their conversation. Another member of the same organization, a viewer and another organization's owner are
refused with the error envelope and change nothing; a bad body from an outsider is still a 404."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from agents.models import Conversation
from tests import factories
from tests.governance.helpers import conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner)


@pytest.fixture
def chat(agent, member):
    return conversation(agent, member, title="Quarterly numbers")


def url(chat) -> str:
    return f"/api/v1/conversations/{chat.pk}"


def test_the_owner_renames_their_conversation_trimmed_and_audited(org, member, chat, api_as):
    response = api_as(member, org).patch(url(chat), {"title": "  Q3 revenue review  "}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["title"] == "Q3 revenue review" and body["pinned_at"] is None and body["id"] == str(chat.pk)
    chat.refresh_from_db()
    assert chat.title == "Q3 revenue review"
    event = AuditEvent.objects.get(action="conversation.renamed")
    assert event.details == {"from": "Quarterly numbers", "to": "Q3 revenue review"}


def test_the_owner_pins_and_unpins_their_conversation(org, member, chat, api_as):
    client = api_as(member, org)
    pinned = client.patch(url(chat), {"pinned": True}, format="json")
    assert pinned.status_code == 200 and pinned.json()["pinned_at"]
    chat.refresh_from_db()
    first_pin = chat.pinned_at
    assert first_pin is not None
    # Pinning again keeps the first pin's time (its place in the list).
    assert client.patch(url(chat), {"pinned": True}, format="json").status_code == 200
    chat.refresh_from_db()
    assert chat.pinned_at == first_pin
    unpinned = client.patch(url(chat), {"pinned": False}, format="json")
    assert unpinned.status_code == 200 and unpinned.json()["pinned_at"] is None
    chat.refresh_from_db()
    assert chat.pinned_at is None


def test_rename_and_pin_in_one_request(org, member, chat, api_as):
    response = api_as(member, org).patch(url(chat), {"title": "Both", "pinned": True}, format="json")
    assert response.status_code == 200
    chat.refresh_from_db()
    assert chat.title == "Both" and chat.pinned_at is not None


@pytest.mark.parametrize("body", [{"title": ""}, {"title": "    "}, {"title": "x" * 201}, {"title": None}, {},
                                  {"pinned": "sometimes"}])
def test_a_bad_body_is_refused_and_changes_nothing(org, member, chat, api_as, body):
    response = api_as(member, org).patch(url(chat), body, format="json")
    assert response.status_code == 400
    assert set(response.json()["error"]) >= {"code", "message"}
    chat.refresh_from_db()
    assert chat.title == "Quarterly numbers" and chat.pinned_at is None
    assert not AuditEvent.objects.filter(action="conversation.renamed").exists()


def test_a_title_of_exactly_200_characters_is_kept(org, member, chat, api_as):
    assert api_as(member, org).patch(url(chat), {"title": "y" * 200}, format="json").status_code == 200
    chat.refresh_from_db()
    assert chat.title == "y" * 200


@pytest.mark.parametrize("body", [{"title": "Mine now"}, {"pinned": True}, {"title": ""}])
def test_another_member_of_the_organization_gets_a_404_and_nothing_changes(org, owner, chat, api_as, body):
    # The org's owner is not the conversation's owner: a conversation is its person's own.
    response = api_as(owner, org).patch(url(chat), body, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    chat.refresh_from_db()
    assert chat.title == "Quarterly numbers" and chat.pinned_at is None
    assert not AuditEvent.objects.filter(action="conversation.renamed").exists()


@pytest.mark.parametrize("body", [{"title": "Taken"}, {"pinned": True}, {"title": ""}])
def test_another_organization_gets_a_404_and_nothing_changes(outsider_org, outsider, chat, api_as, body):
    response = api_as(outsider, outsider_org).patch(url(chat), body, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    chat.refresh_from_db()
    assert chat.title == "Quarterly numbers" and chat.pinned_at is None


def test_a_viewer_may_not_rename(org, viewer, chat, api_as):
    response = api_as(viewer, org).patch(url(chat), {"title": "Viewer's"}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    chat.refresh_from_db()
    assert chat.title == "Quarterly numbers"


def test_an_unknown_conversation_is_a_404(org, member, agent, api_as):
    other = conversation(agent, member)
    pk = other.pk
    other.delete()
    response = api_as(member, org).patch(f"/api/v1/conversations/{pk}", {"pinned": True}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert not Conversation.objects.filter(pk=pk).exists()
