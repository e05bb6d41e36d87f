"""The operator console for custom tools, builder sessions, kits, drafts, database and MCP connections and
spilled output: every changelist and change page renders with a bounded number of queries, filters by
organization, searches, never shows a secret, a sealed DSN, a fixed parameter value, a URL query string,
a full test response or spilled content, and cannot edit rows (deleting one is audited)."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agenticos import vault
from agenticos.models import AuditEvent
from agents.runs import start_run
from capabilities.models import (
    CustomTool,
    DatabaseConnection,
    McpConnection,
    SpilledOutput,
    ToolBuilderSession,
    ToolDraft,
    ToolKit,
)
from tests import factories
from workspaces import store
from workspaces.models import Workspace

MODELS = [CustomTool, ToolBuilderSession, ToolKit, ToolDraft, DatabaseConnection, McpConnection, SpilledOutput,
          Workspace]
SECRET = "sk-admin-page-secret-value-7731"
FIXED = "fixed-param-value-5512"
URL_KEY = "url-query-key-8841"
DSN_PASSWORD = "dsn-password-3319"
MCP_SECRET = "mcp-admin-secret-value-6620"
FULL_RESPONSE = "full-test-response-marker-4410"
SPILLED = "spilled-content-marker-2207"
WORKSPACE_FILE = "workspace-file-content-9902"
NEVER_SHOWN = [SECRET, FIXED, URL_KEY, DSN_PASSWORD, MCP_SECRET, FULL_RESPONSE, SPILLED, WORKSPACE_FILE]
_seq = itertools.count(1)


def build(name: str) -> dict:
    """One organization with a row of every model here, carrying every kind of secret value."""
    n = next(_seq)
    org = factories.organization(name=f"{name} {n}")
    owner = factories.member(org, role="owner")
    secret = factories.secret(org, value=SECRET)
    tool = factories.custom_tool(
        org, alias=f"tool_{n}", url=f"https://api.example.com/v1/things?key={URL_KEY}",
        auth={"family": "header", "header_name": "X-API-Key", "prefix": ""}, credential=secret,
        parameters=[{"name": "account", "location": "query", "mode": "fixed", "value": FIXED},
                    {"name": "q", "location": "query", "required": True}])
    session = ToolBuilderSession.objects.create(organization=org, title=f"Builder {n}", created_by=owner)
    kit = ToolKit.objects.create(organization=org, session=session, name=f"Kit {n}", provider="Example",
                                 credential=secret)
    ToolDraft.objects.create(organization=org, kit=kit, name=f"draft {n}", state="tested", test_ok=True,
                             test_status=200, test_preview="{\"ok\": true}", test_full=FULL_RESPONSE * 3,
                             definition={"name": "d", "alias": "d", "method": "GET",
                                         "url": f"https://api.example.com/x?token={URL_KEY}",
                                         "parameters": [{"name": "account", "location": "query", "mode": "fixed",
                                                         "value": FIXED}]})
    sealed = vault.seal(org.pk, f"postgresql://app:{DSN_PASSWORD}@db.example.com/app")
    DatabaseConnection.objects.create(organization=org, name=f"db{n}", key_version=sealed.key_version,
                                      wrapped_key=sealed.wrapped_key, ciphertext=sealed.ciphertext)
    mcp_secret = factories.secret(org, value=MCP_SECRET)
    McpConnection.objects.create(organization=org, name=f"mcp{n}", url=f"https://mcp.example.com/mcp?t={URL_KEY}",
                                 auth_secret=mcp_secret, tools=[{"name": "add", "description": ""}])
    agent = factories.published_agent(org, owner)
    run = start_run(agent=agent, version=agent.versions.first(), surface="api", prompt="hi", user=owner,
                    acting_role="owner", enqueue=False)
    SpilledOutput.objects.create(organization=org, run=run, handle=f"pai-run/call-{n}.0",
                                 content=SPILLED.encode() * 100, size=len(SPILLED) * 100)
    workspace = store.open_for_run(run, "agent")
    store.write(workspace.pk, f"/workspace/notes-{n}.md", WORKSPACE_FILE.encode(), run_id=str(run.pk))
    return {"org": org, "tool": tool}


@pytest.fixture
def console(client, db):
    client.force_login(factories.user(email="operator@example.com", is_staff=True, is_superuser=True))
    return client


def changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def change(obj) -> str:
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_each_changelist_and_change_page_renders_without_a_secret(model, console):
    build("Acme")
    listing = console.get(changelist(model))
    assert listing.status_code == 200
    page = console.get(change(model.objects.first()))
    assert page.status_code == 200
    for response in (listing, page):
        text = response.content.decode()
        assert not [value for value in NEVER_SHOWN if value in text]
    assert b'name="_save"' not in page.content  # read-only


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_each_changelist_costs_the_same_queries_whatever_the_row_count(model, console):
    build("Acme")
    console.get(changelist(model))
    with CaptureQueriesContext(connection) as before:
        console.get(changelist(model))
    build("Beta")
    build("Gamma")
    with CaptureQueriesContext(connection) as after:
        response = console.get(changelist(model))
    assert response.status_code == 200
    assert len(after) == len(before), [q["sql"] for q in after.captured_queries]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_each_changelist_filters_by_organization_and_searches(model, console):
    mine = build("Acme")["org"]
    build("Outsider")
    filtered = console.get(changelist(model), {"organization__id__exact": str(mine.pk)})
    assert filtered.status_code == 200
    assert filtered.context["cl"].result_count == model.objects.filter(organization=mine).count() == 1
    assert console.get(changelist(model), {"q": "no-such-thing"}).context["cl"].result_count == 0


def test_a_tool_is_found_by_its_alias_and_shows_what_it_does_without_values(console):
    world = build("Acme")
    found = console.get(changelist(CustomTool), {"q": world["tool"].alias})
    assert found.context["cl"].result_count == 1
    page = console.get(change(world["tool"])).content.decode()
    assert "https://api.example.com/v1/things?[query hidden]" in page
    assert "fixed (value hidden)" in page and "header: X-API-Key" in page
    assert "sealed in the vault" in console.get(change(DatabaseConnection.objects.first())).content.decode()


def test_rows_cannot_be_added_or_edited_and_a_deletion_is_audited(console):
    tool = build("Acme")["tool"]
    assert console.get(reverse("admin:capabilities_customtool_add")).status_code == 403
    assert console.post(change(tool), {"name": "renamed"}).status_code == 403
    tool.refresh_from_db()
    assert tool.name != "renamed"
    delete = reverse("admin:capabilities_customtool_delete", args=[tool.pk])
    assert console.post(delete, {"post": "yes"}).status_code == 302
    assert not CustomTool.objects.filter(pk=tool.pk).exists()
    assert AuditEvent.objects.filter(action="admin.customtool.delete", organization=tool.organization).exists()


def test_a_member_without_console_rights_is_sent_to_the_login_page(client, db):
    org = build("Acme")["org"]
    client.force_login(factories.member(org, role="owner"))
    for model in MODELS:
        assert client.get(changelist(model)).status_code == 302


def test_a_workspace_shows_its_files_by_name_and_size_only(console):
    build("Acme")
    workspace = Workspace.objects.get()
    listing = console.get(changelist(Workspace)).content.decode()
    assert "Shared by everyone who talks to this agent" in listing
    page = console.get(change(workspace)).content.decode()
    assert "/workspace/notes-" in page and f"{len(WORKSPACE_FILE)} bytes" in page and WORKSPACE_FILE not in page
