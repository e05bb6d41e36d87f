"""A person deletes their own conversation (DELETE /api/v1/conversations/{id}, the chat's Delete button): its
messages, runs, workspace and uploaded files go — the files from storage, right after commit — the spend its
runs made stays in the ledger. Someone else's conversation, another organization's, a viewer, and a
conversation with a run still going are refused with nothing deleted."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from agenticos.models import AuditEvent
from agenticos.tenancy import SESSION_KEY
from agents.models import Conversation, Message, Run, RunStatus
from governance.models import PendingFileRemoval, SpendEntry
from tests import factories
from tests.api.state import TABLES, changed_tables, database_state
from tests.governance.helpers import conversation, turn
from tests.governance.test_conversation_files import filled_conversation, run_after_commit, stored
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db

WATCHED = (*TABLES, "agents.ToolCall", "workspaces.Workspace", "workspaces.WorkspaceFile", "embeds.EmbedFile",
           "governance.PendingFileRemoval", "governance.SpendEntry")


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner)


@pytest.fixture
def page(agent, owner):
    return factories.embed(agent, kind="page", created_by=owner)


@pytest.fixture
def bot(org):
    from channelbots.models import ChannelBot

    return ChannelBot.objects.create(organization=org, platform="slack", name="bot")


def url(chat) -> str:
    return f"/api/v1/conversations/{chat.pk}"


def untouched(filled) -> bool:
    chat = filled["chat"]
    return (Conversation.objects.filter(pk=chat.pk).exists() and Message.objects.filter(conversation=chat).count() == 4
            and Workspace.objects.filter(pk=filled["workspace"]).exists() and all(map(stored, filled["paths"]))
            and not PendingFileRemoval.objects.filter(path__in=filled["paths"]).exists())


def test_the_owner_deletes_a_conversation_with_its_files_and_the_spend_stays(
        org, owner, agent, page, bot, api_as, django_capture_on_commit_callbacks):
    mine = filled_conversation(agent, owner, page, bot, "mine")
    other = filled_conversation(agent, owner, page, bot, "other")
    run = Run.objects.filter(conversation=mine["chat"]).first()
    SpendEntry.objects.create(organization=org, agent=agent, run=run, cost_usd=Decimal("0.5"))

    with django_capture_on_commit_callbacks() as callbacks:
        response = api_as(owner, org).delete(url(mine["chat"]))
    assert response.status_code == 204
    run_after_commit(callbacks)

    assert not Conversation.objects.filter(pk=mine["chat"].pk).exists()
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not any(map(stored, mine["paths"])) and not Workspace.objects.filter(pk=mine["workspace"]).exists()
    assert untouched(other)
    spend = SpendEntry.objects.get()
    assert spend.run_id is None and spend.cost_usd == Decimal("0.5")
    event = AuditEvent.objects.get(action="conversation.deleted")
    assert event.details["messages"] == 4 and event.details["runs"] == 2 and event.actor_id == owner.pk


def test_a_colleagues_conversation_is_a_404_and_stays(org, owner, agent, page, bot, api_as):
    colleague = factories.member(org, "admin")
    theirs = filled_conversation(agent, owner, page, bot, "theirs")
    before = database_state(WATCHED)
    response = api_as(colleague, org).delete(url(theirs["chat"]))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert changed_tables(before, database_state(WATCHED)) == [] and untouched(theirs)


def test_an_outsider_is_a_404_whichever_organization_they_name(org, owner, agent, page, bot, outsider, outsider_org,
                                                                api_as):
    mine = filled_conversation(agent, owner, page, bot, "mine")
    before = database_state(WATCHED)
    assert api_as(outsider, org).delete(url(mine["chat"])).status_code == 404
    assert api_as(outsider, outsider_org).delete(url(mine["chat"])).status_code == 404
    assert changed_tables(before, database_state(WATCHED)) == [] and untouched(mine)


def test_a_viewer_may_not_delete_even_their_own(org, agent, api_as):
    viewer = factories.member(org, "viewer")
    chat = conversation(agent, viewer)
    turn(chat)
    response = api_as(viewer, org).delete(url(chat))
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"
    assert Conversation.objects.filter(pk=chat.pk).exists()


@pytest.mark.parametrize("status", [RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.AWAITING_APPROVAL])
def test_a_conversation_with_a_run_still_going_is_a_409_and_stays(org, owner, agent, api_as, status):
    chat = conversation(agent, owner)
    turn(chat)
    turn(chat, status=status)
    before = database_state(WATCHED)
    response = api_as(owner, org).delete(url(chat))
    assert response.status_code == 409 and response.json()["error"]["code"] == "run_active"
    assert changed_tables(before, database_state(WATCHED)) == []


def test_the_chat_page_deletes_ones_own_conversation_and_refuses_a_colleagues(org, owner, agent, page, bot):
    mine = filled_conversation(agent, owner, page, bot, "mine")
    client = Client()
    client.force_login(owner)
    session = client.session
    session[SESSION_KEY] = str(org.pk)
    session.save()
    shown = client.get(f"/chat/{mine['chat'].pk}/").content.decode()
    assert f'action="/chat/{mine["chat"].pk}/delete"' in shown
    assert client.get(f"/chat/{mine['chat'].pk}/delete").status_code == 405
    response = client.post(f"/chat/{mine['chat'].pk}/delete")
    assert response.status_code == 302 and response["Location"] == "/chat/"
    assert not Conversation.objects.filter(pk=mine["chat"].pk).exists()

    colleague = factories.member(org, "member")
    theirs = filled_conversation(agent, colleague, page, bot, "theirs")
    assert client.post(f"/chat/{theirs['chat'].pk}/delete").status_code == 404
    assert untouched(theirs)


def test_the_schema_documents_the_delete(client, db):
    doc = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = doc["paths"]["/api/v1/conversations/{conversation_id}"]["delete"]
    assert {"204", "403", "404", "409"} <= set(operation["responses"])

