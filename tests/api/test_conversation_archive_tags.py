"""Archive and tags on one's own conversations (issue 45 §8): PATCH /api/v1/conversations/{id} with `archived` and
`tags`, the list's fields and its `archived` / `tag` filters. A conversation is its person's own: another member
of the organization, a viewer and another organization are refused and change nothing; tags are cleaned (trimmed,
lower-cased, no duplicates) and bounded."""

from __future__ import annotations

import pytest

from agents.models import Conversation
from tests import factories
from tests.governance.helpers import conversation

pytestmark = pytest.mark.django_db

LIST = "/api/v1/conversations"


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner)


@pytest.fixture
def chat(agent, member):
    return conversation(agent, member, title="Quarterly numbers")


def url(chat) -> str:
    return f"/api/v1/conversations/{chat.pk}"


def listed(client, query: str = "") -> list[str]:
    response = client.get(LIST + query)
    assert response.status_code == 200, response.content
    return [row["title"] for row in response.json()["results"]]


def test_an_archived_conversation_leaves_the_list_and_shows_in_the_archived_one(org, member, agent, chat, api_as):
    other = conversation(agent, member, title="Holiday plans")
    client = api_as(member, org)
    archived = client.patch(url(chat), {"archived": True}, format="json")
    assert archived.status_code == 200 and archived.json()["archived_at"]
    assert listed(client) == ["Holiday plans"]
    assert listed(client, "?archived=true") == ["Quarterly numbers"]
    assert sorted(listed(client, "?archived=all")) == ["Holiday plans", "Quarterly numbers"]
    assert client.get(LIST + "?archived=maybe").status_code == 400
    # Still readable and open where it is; unarchived, it is back in the list.
    assert client.get(url(chat)).status_code == 200
    assert client.patch(url(chat), {"archived": False}, format="json").json()["archived_at"] is None
    assert sorted(listed(client)) == ["Holiday plans", "Quarterly numbers"]
    assert other.pk  # untouched by either request
    assert Conversation.objects.get(pk=other.pk).archived_at is None


def test_tags_are_cleaned_listed_and_filter_the_list(org, member, agent, chat, api_as):
    conversation(agent, member, title="Untagged")
    client = api_as(member, org)
    response = client.patch(url(chat), {"tags": ["  Work ", "work", "Q3   review", ""]}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["tags"] == ["work", "q3 review"]
    row = next(r for r in client.get(LIST).json()["results"] if r["id"] == str(chat.pk))
    assert row["tags"] == ["work", "q3 review"]
    assert listed(client, "?tag=WORK") == ["Quarterly numbers"]
    assert listed(client, "?tag=q3%20review") == ["Quarterly numbers"]
    assert listed(client, "?tag=wor") == []  # a whole tag, not a prefix
    assert client.patch(url(chat), {"tags": []}, format="json").json()["tags"] == []
    assert listed(client, "?tag=work") == []


def test_the_list_reads_the_fields_in_one_query_whatever_the_filters(org, member, agent, api_as,
                                                                     django_assert_max_num_queries):
    for n in range(5):
        c = conversation(agent, member, title=f"Chat {n}")
        Conversation.objects.filter(pk=c.pk).update(tags=["work"])
    client = api_as(member, org)
    client.get(LIST)  # warm the session's membership cache
    with django_assert_max_num_queries(6):
        assert len(listed(client, "?tag=work")) == 5


@pytest.mark.parametrize("body", [{"tags": "work"}, {"tags": ["x" * 41]}, {"tags": [f"t{n}" for n in range(11)]},
                                  {"tags": [["nested"]]}, {"archived": "sometimes"}])
def test_a_bad_body_is_refused_and_changes_nothing(org, member, chat, api_as, body):
    response = api_as(member, org).patch(url(chat), body, format="json")
    # The serializer refuses it (a wrong type, past a length or a count): 400, the fields named in details.
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error" and set(error["details"]) == set(body)
    chat.refresh_from_db()
    assert chat.tags == [] and chat.archived_at is None


def test_a_change_with_one_bad_field_changes_nothing_at_all(org, member, chat, api_as):
    """All the fields sent or none: a good title, pin and archive beside a tag the service refuses (a control
    character passes the serializer) leave the conversation as it was."""
    body = {"title": "Renamed", "pinned": True, "archived": True, "tags": ["fine", "bell\x07"]}
    response = api_as(member, org).patch(url(chat), body, format="json")
    assert response.status_code == 422, response.content
    chat.refresh_from_db()
    assert (chat.title, chat.pinned_at, chat.archived_at, chat.tags) == ("Quarterly numbers", None, None, [])


@pytest.mark.parametrize("body", [{"archived": True}, {"tags": ["mine"]}])
def test_another_member_a_viewer_and_another_organization_change_nothing(org, owner, viewer, outsider,
                                                                         outsider_org, chat, api_as, body):
    for client, wanted in ((api_as(owner, org), 404), (api_as(outsider, outsider_org), 404),
                           (api_as(viewer, org), 403)):
        response = client.patch(url(chat), body, format="json")
        assert response.status_code == wanted
        assert "error" in response.json()
    chat.refresh_from_db()
    assert chat.tags == [] and chat.archived_at is None
    # Nor do they see it in their lists, archived or tagged.
    Conversation.objects.filter(pk=chat.pk).update(tags=["mine"], archived_at=chat.created_at)
    for client in (api_as(owner, org), api_as(outsider, outsider_org)):
        assert listed(client, "?archived=all") == []
        assert listed(client, "?tag=mine&archived=true") == []
