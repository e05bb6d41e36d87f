"""The files panel's API: GET /api/v1/conversations/{id}/workspace, …/workspace/file and …/workspace/raw —
through the conversation (its owner), never another person's or another organization's."""

from __future__ import annotations

import pytest

from agents.models import Conversation, Run
from tests import factories
from workspaces import store
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(org, owner, sandbox_agent):
    conversation = Conversation.objects.create(organization=org, agent=sandbox_agent, owner=owner, title="Files")
    run = Run.objects.create(organization=org, agent=sandbox_agent, version=sandbox_agent.versions.first(),
                             conversation=conversation, surface="web", user=owner)
    workspace = store.open_for_run(run, "agent")
    store.write(workspace.pk, "/workspace/notes.md", b"# Notes\nShip on Friday.", run_id=str(run.pk))
    store.write(workspace.pk, "/workspace/chart.png", b"\x89PNG\r\n\x1a\n\x00", run_id=str(run.pk))
    store.write(workspace.pk, "/workspace/.env", b"TOKEN=abc", run_id=str(run.pk))
    return conversation


def url(conversation, tail=""):
    return f"/api/v1/conversations/{conversation.pk}/workspace{tail}"


def test_the_listing_says_whose_files_and_how_full(api_as, org, owner, conversation):
    body = api_as(owner, org).get(url(conversation)).json()["workspace"]
    assert body["scope"] == "agent" and body["label"] == "Shared by everyone who talks to this agent"
    assert [f["path"] for f in body["files"]] == ["/workspace/.env", "/workspace/chart.png", "/workspace/notes.md"]
    assert body["used_bytes"] == 23 + 9 + 9 and body["max_bytes"] > body["used_bytes"]


def test_text_and_bytes_are_read_through_the_conversation(api_as, org, owner, conversation):
    client = api_as(owner, org)
    text = client.get(url(conversation, "/file"), {"path": "notes.md"}).json()
    assert text == {"path": "/workspace/notes.md", "size": 23, "content": "# Notes\nShip on Friday."}
    raw = client.get(url(conversation, "/raw"), {"path": "/workspace/chart.png"})
    assert raw.status_code == 200 and raw["Content-Type"] == "image/png" and raw.content.startswith(b"\x89PNG")
    assert raw["Content-Disposition"] == 'attachment; filename="chart.png"' and raw["X-Content-Type-Options"] == "nosniff"
    binary = client.get(url(conversation, "/file"), {"path": "/workspace/chart.png"})
    assert binary.status_code == 422 and "not text" in binary.json()["error"]["message"]


def test_credentials_missing_files_and_no_path_get_clear_errors(api_as, org, owner, conversation):
    client = api_as(owner, org)
    env = client.get(url(conversation, "/raw"), {"path": "/workspace/.env"})
    assert env.status_code == 403 and b"TOKEN" not in env.content
    missing = client.get(url(conversation, "/file"), {"path": "/workspace/nope.md"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert client.get(url(conversation, "/file")).status_code == 422


def test_a_conversation_whose_agent_keeps_no_files_has_no_panel(api_as, org, owner):
    plain = factories.published_agent(org, owner, name="Plain")
    conversation = Conversation.objects.create(organization=org, agent=plain, owner=owner)
    assert api_as(owner, org).get(url(conversation)).json() == {"workspace": None}


def test_a_person_the_chat_is_shared_with_reads_its_files(api_as, org, conversation):
    from guardian.shortcuts import assign_perm

    colleague = factories.member(org, "member")
    assign_perm("agents.view_conversation", colleague, conversation)
    client = api_as(colleague, org)
    assert [f["path"] for f in client.get(url(conversation)).json()["workspace"]["files"]][-1] == "/workspace/notes.md"
    assert client.get(url(conversation, "/file"), {"path": "notes.md"}).json()["content"] == "# Notes\nShip on Friday."


def test_another_member_and_an_outsider_organization_get_404(api_as, org, conversation, outsider, outsider_org):
    colleague = factories.member(org, "member")
    for client in (api_as(colleague, org), api_as(outsider, outsider_org)):
        for tail in ("", "/file", "/raw"):
            response = client.get(url(conversation, tail), {"path": "/workspace/notes.md"})
            assert response.status_code == 404, (tail, response.content)
            assert b"Ship on Friday" not in response.content
    assert Workspace.objects.count() == 1
