"""The chat's conversation list: own conversations, those shared with the person, and channel threads they
took part in and are still a member of (confirmed against the platform) — nothing of another organization."""

from __future__ import annotations

import pytest
from django.urls import reverse
from guardian.shortcuts import assign_perm

from agents.models import Conversation, Message

pytestmark = pytest.mark.django_db

STILL_MEMBER: set[str] = set()


def platform_says(conversation, user_id) -> bool:
    return str(conversation.pk) in STILL_MEMBER


@pytest.fixture(autouse=True)
def _membership_check(settings):
    STILL_MEMBER.clear()
    settings.CHANNEL_MEMBERSHIP_CHECK = "tests.console.test_conversation_list.platform_says"


def conversation(agent, owner, title, surface="web"):
    return Conversation.objects.create(organization=agent.organization, agent=agent, owner=owner, title=title,
                                       surface=surface)


def listed(client) -> str:
    response = client.get(reverse("console:chat"))
    assert response.status_code == 200
    return response.content.decode()


def test_own_shared_and_confirmed_channel_threads_are_listed_and_others_are_not(
        client_as, org, owner, member, agent, outsider, outsider_org, outsider_agent):
    conversation(agent, member, "My own plans")
    shared = conversation(agent, owner, "Owner's shared notes")
    private = conversation(agent, owner, "Owner's private notes")
    thread = conversation(agent, None, "Slack thread about pricing", surface="slack")
    Message.objects.create(conversation=thread, role="user", author=member, content="me too")
    conversation(outsider_agent, outsider, "Foreign secrets")
    assign_perm("agents.view_conversation", member, shared)
    client = client_as(member, org)

    page = listed(client)
    assert "My own plans" in page and "Owner&#x27;s shared notes" in page
    assert "private notes" not in page and "Foreign secrets" not in page
    assert "Slack thread about pricing" not in page  # the platform has not confirmed membership

    STILL_MEMBER.add(str(thread.pk))
    assert "Slack thread about pricing" in listed(client)
    # Only the person's own conversation has an actions menu (rename, pin, archive, tags, delete): what they may
    # only read shows no action, destructive or not.
    page = listed(client)
    assert page.count('aria-label="Actions for ') == 1 and 'aria-label="Actions for My own plans"' in page
    assert f'action="/chat/{shared.pk}/delete"' not in page and f'action="/chat/{thread.pk}/delete"' not in page

    # Shared and channel conversations open read-only; the rest are not there at all.
    for readable in (shared, thread):
        response = client.get(reverse("console:chat-conversation", args=[readable.pk]))
        assert response.status_code == 200 and response.context["read_only"] is True
    assert client.get(reverse("console:chat-conversation", args=[private.pk])).status_code == 404
    assert client.get(reverse("console:chat-turns", args=[private.pk])).status_code == 404


def test_an_outsider_sees_none_of_our_conversations_even_with_a_stray_grant(
        client_as, org, owner, agent, outsider, outsider_org):
    ours = conversation(agent, owner, "Acme roadmap")
    assign_perm("agents.view_conversation", outsider, ours)  # written by mistake: still another organization
    client = client_as(outsider, outsider_org)
    assert "Acme roadmap" not in listed(client)
    assert client.get(reverse("console:chat-conversation", args=[ours.pk])).status_code == 404
