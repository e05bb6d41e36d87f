"""The chat list's own controls, without script: rename and pin one's own conversation (POST forms that come back
to where they were), pinned ones first, and a search over titles and message text in the person's own list.
Another member of the organization and another organization get a 404 and change nothing."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agenticos.models import AuditEvent
from agents.models import Conversation, Message

pytestmark = pytest.mark.django_db


def conversation(agent, owner, title, said=""):
    chat = Conversation.objects.create(organization=agent.organization, agent=agent, owner=owner, title=title)
    if said:
        Message.objects.create(conversation=chat, role="user", author=owner, content=said)
    return chat


def titles(response) -> list[str]:
    return [c.title for c in response.context["conversations"]]


def test_the_owner_renames_a_conversation_from_the_list(client_as, org, member, agent):
    chat = conversation(agent, member, "Untitled")
    client = client_as(member, org)
    response = client.post(reverse("console:chat-rename", args=[chat.pk]),
                           {"title": "  Launch plan  ", "next": "/chat/?q=launch"})
    assert response.status_code == 302 and response["Location"] == "/chat/?q=launch"
    chat.refresh_from_db()
    assert chat.title == "Launch plan"
    assert AuditEvent.objects.filter(action="conversation.renamed", actor=member).count() == 1
    assert "Launch plan" in client.get(response["Location"]).content.decode()


@pytest.mark.parametrize("title", ["", "   ", "z" * 201])
def test_a_blank_or_too_long_title_is_refused_in_place(client_as, org, member, agent, title):
    chat = conversation(agent, member, "Keep me")
    client = client_as(member, org)
    response = client.post(reverse("console:chat-rename", args=[chat.pk]), {"title": title}, follow=True)
    assert response.status_code == 200
    assert "1 to 200 characters" in response.content.decode()
    chat.refresh_from_db()
    assert chat.title == "Keep me"


def test_a_hostile_next_goes_back_to_the_conversation(client_as, org, member, agent):
    chat = conversation(agent, member, "Mine")
    client = client_as(member, org)
    for hostile in ("https://evil.example/chat/", "//evil.example/chat/", "/settings/"):
        response = client.post(reverse("console:chat-pin", args=[chat.pk]), {"pinned": "1", "next": hostile})
        assert response["Location"] == reverse("console:chat-conversation", args=[chat.pk])


def test_pinned_conversations_come_first_newest_pin_first(client_as, org, member, agent):
    old = conversation(agent, member, "Old")
    middle = conversation(agent, member, "Middle")
    conversation(agent, member, "Newest")
    client = client_as(member, org)
    assert titles(client.get(reverse("console:chat"))) == ["Newest", "Middle", "Old"]

    client.post(reverse("console:chat-pin", args=[old.pk]), {"pinned": "1"})
    client.post(reverse("console:chat-pin", args=[middle.pk]), {"pinned": "1"})
    page = client.get(reverse("console:chat"))
    assert titles(page) == ["Middle", "Old", "Newest"]
    assert 'aria-label="Actions for Middle"' in page.content.decode() and "data-pin>Unpin</button>" in page.content.decode()

    client.post(reverse("console:chat-pin", args=[middle.pk]), {"pinned": "0"})
    assert titles(client.get(reverse("console:chat"))) == ["Old", "Newest", "Middle"]
    middle.refresh_from_db()
    assert middle.pinned_at is None


def test_someone_elses_pin_on_a_shared_conversation_does_not_lift_it_in_my_list(client_as, org, owner, member, agent):
    from guardian.shortcuts import assign_perm

    shared = conversation(agent, owner, "Owner's pinned notes")
    conversation(agent, member, "My newer chat")
    assign_perm("agents.view_conversation", member, shared)
    client_as(owner, org).post(reverse("console:chat-pin", args=[shared.pk]), {"pinned": "1"})
    page = client_as(member, org).get(reverse("console:chat"))
    assert titles(page) == ["My newer chat", "Owner's pinned notes"]
    # Read-only for the member: no controls on it.
    assert f'action="{reverse("console:chat-pin", args=[shared.pk])}"' not in page.content.decode()


def test_search_matches_titles_and_message_text_in_my_own_list_only(
        client_as, org, owner, member, agent, outsider, outsider_org, outsider_agent):
    conversation(agent, member, "Budget review")
    conversation(agent, member, "Weekend", said="what is the BUDGET for the trip?")
    conversation(agent, member, "Unrelated", said="hello")
    conversation(agent, owner, "Owner's budget", said="budget budget")
    conversation(outsider_agent, outsider, "Foreign budget", said="budget")
    client = client_as(member, org)

    response = client.get(reverse("console:chat"), {"q": "budget"})
    assert sorted(titles(response)) == ["Budget review", "Weekend"]
    assert 'value="budget"' in response.content.decode()
    empty = client.get(reverse("console:chat"), {"q": "nothing like it"})
    assert titles(empty) == [] and "No conversation matches" in empty.content.decode()


def test_a_search_keeps_its_query_count(client_as, org, member, agent):
    client = client_as(member, org)
    for i in range(2):
        conversation(agent, member, f"budget {i}", said="budget")
    client.get("/chat/?q=budget")

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/chat/?q=budget").status_code == 200
        return len(captured)

    few = count()
    for i in range(8):
        chat = conversation(agent, member, f"more {i}", said="the budget")
        chat.pinned_at = chat.created_at
        chat.save(update_fields=["pinned_at"])
    assert count() == few


@pytest.mark.parametrize("name,data", [("console:chat-rename", {"title": "Mine now"}),
                                       ("console:chat-pin", {"pinned": "1"})])
def test_another_member_of_the_organization_gets_a_404(client_as, org, owner, member, agent, name, data):
    chat = conversation(agent, member, "Member's own")
    response = client_as(owner, org).post(reverse(name, args=[chat.pk]), data)
    assert response.status_code == 404
    chat.refresh_from_db()
    assert chat.title == "Member's own" and chat.pinned_at is None
    assert not AuditEvent.objects.filter(action="conversation.renamed").exists()


@pytest.mark.parametrize("name,data", [("console:chat-rename", {"title": "Taken"}),
                                       ("console:chat-pin", {"pinned": "1"})])
def test_another_organization_gets_a_404(client_as, org, member, agent, outsider, outsider_org, name, data):
    chat = conversation(agent, member, "Member's own")
    response = client_as(outsider, outsider_org).post(reverse(name, args=[chat.pk]), data)
    assert response.status_code == 404
    chat.refresh_from_db()
    assert chat.title == "Member's own" and chat.pinned_at is None


def test_a_viewer_may_not_and_a_get_is_refused(client_as, org, member, viewer, agent):
    chat = conversation(agent, member, "Member's own")
    assert client_as(viewer, org).post(reverse("console:chat-pin", args=[chat.pk]), {"pinned": "1"}).status_code == 403
    assert client_as(member, org).get(reverse("console:chat-rename", args=[chat.pk])).status_code == 405
    chat.refresh_from_db()
    assert chat.pinned_at is None


def test_the_list_is_grouped_by_last_activity_in_the_persons_time_zone_pins_first(client_as, org, member, agent):
    """Spec of the chat issue: grouped by date (Today, Yesterday, Last 7 days…). The person's pins first, then by
    last activity in their time zone; empty groups are not drawn; the order inside each group is kept."""
    import re
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    ages = {"Now": 0, "Last night": 1, "Monday": 4, "Earlier this month": 20, "Long ago": 90, "Pinned one": 200}
    made = {}
    for title, days in ages.items():
        made[title] = conversation(agent, member, title)
        Conversation.objects.filter(pk=made[title].pk).update(last_active_at=now - timedelta(days=days))
    client = client_as(member, org)
    client.post(reverse("console:chat-pin", args=[made["Pinned one"].pk]), {"pinned": "1"})
    page = client.get(reverse("console:chat"))
    groups = [(g["key"], [c.title for c in g["items"]]) for g in page.context["conversation_groups"]]
    long_ago = timezone.localdate(now - timedelta(days=90))
    assert groups == [("pinned", ["Pinned one"]), ("today", ["Now"]), ("yesterday", ["Last night"]),
                      ("week", ["Monday"]), ("month", ["Earlier this month"]),
                      (long_ago.strftime("%Y-%m"), ["Long ago"])]
    html = page.content.decode()
    headings = re.findall(r'<h3 class="conversation-group" id="conversations-[^"]+">([^<]+)</h3>', html)
    assert headings[:5] == ["Pinned", "Today", "Yesterday", "Previous 7 days", "Previous 30 days"]
    assert headings[5] == long_ago.strftime("%B %Y")  # the month's name and year, in the person's language
    # Each group is a list labelled by its heading (a screen reader announces "Today, list, 1 item").
    assert 'aria-labelledby="conversations-today"' in html


def test_a_search_shows_its_matches_in_their_groups_too(client_as, org, member, agent):
    conversation(agent, member, "Launch plan")
    conversation(agent, member, "Lunch")
    page = client_as(member, org).get(reverse("console:chat") + "?q=launch")
    assert [(g["key"], [c.title for c in g["items"]]) for g in page.context["conversation_groups"]] == [
        ("today", ["Launch plan"])]


def test_the_theme_is_remembered_for_the_person_and_only_light_dark_or_the_system(client_as, client, org, member, owner):
    """The header's toggle posts the choice (theme.js); every page renders it for the person from its first paint;
    Settings → Profile sets it back to the system's. Another person's theme is theirs; a stranger cannot set one."""
    mine = client_as(member, org)
    assert mine.post(reverse("console:settings-theme"), {"theme": "dark"}).json() == {"theme": "dark"}
    member.refresh_from_db()
    assert member.theme == "dark"
    page = mine.get(reverse("console:chat")).content.decode()
    assert '<html lang="en" data-theme="dark" data-theme-person="dark">' in page
    theirs = client_as(owner, org).get(reverse("console:chat")).content.decode()
    assert 'data-theme-person=""' in theirs and 'data-theme="dark"' not in theirs

    refused = mine.post(reverse("console:settings-theme"), {"theme": "purple"})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid"
    assert mine.get(reverse("console:settings-theme")).status_code == 405
    member.refresh_from_db()
    assert member.theme == "dark"

    mine.post(reverse("console:settings"), {"display_name": "Mia", "theme": ""})
    member.refresh_from_db()
    assert member.theme == "" and member.display_name == "Mia"
    assert "data-theme=" not in mine.get(reverse("console:chat")).content.decode().split(">", 2)[1]

    stranger = client.post(reverse("console:settings-theme"), {"theme": "dark"})
    assert stranger.status_code == 302 and stranger["Location"].startswith("/login/")
