"""The chat list's archive and tags (issue 45 §8) through the console's forms: the owner archives (the list
leaves it out, the Archived view shows it, unarchive brings it back) and tags a conversation (its tags show on it
and filter the list). A colleague, a viewer and another organization's owner get 404/403 and change nothing; a
colleague's conversation never shows in the person's archived or tagged views."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def mine(org, member, agent):
    return Conversation.objects.create(organization=org, agent=agent, owner=member, title="Quarterly numbers")


def items(page: str, conversation) -> bool:
    return f'data-conversation="{conversation.pk}"' in page


def test_the_owner_archives_and_unarchives_from_the_list(client_as, org, member, agent, mine):
    kept = Conversation.objects.create(organization=org, agent=agent, owner=member, title="Holiday plans")
    client = client_as(member, org)
    response = client.post(reverse("console:chat-archive", args=[mine.pk]), {"archived": "1", "next": "/chat/"})
    assert response.status_code == 302 and response["Location"] == "/chat/"
    mine.refresh_from_db()
    assert mine.archived_at is not None
    listing = client.get(reverse("console:chat")).content.decode()
    assert items(listing, kept) and not items(listing, mine)
    archived = client.get(reverse("console:chat") + "?archived=1").content.decode()
    assert items(archived, mine) and not items(archived, kept)
    assert f'aria-label="Actions for {mine.title}"' in archived and "data-archive>Unarchive</button>" in archived
    client.post(reverse("console:chat-archive", args=[mine.pk]), {"archived": "0"})
    mine.refresh_from_db()
    assert mine.archived_at is None
    assert items(client.get(reverse("console:chat")).content.decode(), mine)


def test_the_owner_tags_and_the_tags_filter_the_list(client_as, org, member, agent, mine):
    other = Conversation.objects.create(organization=org, agent=agent, owner=member, title="Holiday plans")
    client = client_as(member, org)
    client.post(reverse("console:chat-tags", args=[mine.pk]), {"tags": " Work, q3 review ,work,"})
    mine.refresh_from_db()
    assert mine.tags == ["work", "q3 review"]
    page = client.get(reverse("console:chat")).content.decode()
    assert 'data-tag-filter="work"' in page and 'data-tag-filter="q3 review"' in page
    filtered = client.get(reverse("console:chat") + "?tag=Work").content.decode()
    assert items(filtered, mine) and not items(filtered, other)
    # The conversation's own link keeps the filter.
    assert f'/chat/{mine.pk}/?tag=work' in filtered
    too_long = client.post(reverse("console:chat-tags", args=[mine.pk]), {"tags": "x" * 41}, follow=True)
    assert "A tag has at most 40 characters." in too_long.content.decode()
    mine.refresh_from_db()
    assert mine.tags == ["work", "q3 review"]


@pytest.mark.parametrize("action, data", [("console:chat-archive", {"archived": "1"}),
                                          ("console:chat-tags", {"tags": "taken"})])
def test_no_one_else_archives_or_tags_and_nothing_changes(client_as, org, owner, viewer, outsider, outsider_org,
                                                          mine, action, data):
    for client, wanted in ((client_as(owner, org), 404), (client_as(outsider, outsider_org), 404),
                           (client_as(viewer, org), 403)):
        assert client.post(reverse(action, args=[mine.pk]), data).status_code == wanted
    mine.refresh_from_db()
    assert mine.archived_at is None and mine.tags == []


def test_a_colleagues_filed_conversations_never_show_in_the_persons_views(client_as, org, owner, member, mine):
    Conversation.objects.filter(pk=mine.pk).update(tags=["secret"])
    client = client_as(owner, org)
    assert 'data-tag-filter="secret"' not in client.get(reverse("console:chat")).content.decode()
    assert not items(client.get(reverse("console:chat") + "?tag=secret").content.decode(), mine)
    Conversation.objects.filter(pk=mine.pk).update(archived_at=mine.created_at)
    assert not items(client.get(reverse("console:chat") + "?archived=1").content.decode(), mine)
