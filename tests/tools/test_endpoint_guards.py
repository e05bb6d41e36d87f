"""Every endpoint of /api/v1/tools, tool-templates, tool-kits, db-connections and mcp-connections: an outsider
gets 404, a viewer gets 403 on writes, and a refused request leaves every row as it was; list endpoints do not
grow queries with rows. Paths come from the route names, whatever the trailing-slash convention."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from capabilities.models import DatabaseConnection, McpConnection, ToolBuilderSession, ToolDraft, ToolKit
from tests import factories
from tests.api.state import changed_tables, database_state

pytestmark = pytest.mark.urls("tests.tools.urls")

# Every table these endpoints write to (and the audit log, the secrets a tool or connection may seal).
TABLES = ("capabilities.CustomTool", "capabilities.ToolBuilderSession", "capabilities.ToolKit",
          "capabilities.ToolDraft", "capabilities.DatabaseConnection", "capabilities.McpConnection",
          "agenticos.Secret", "agenticos.AuditEvent", "agents.Agent", "agents.Run", "agents.Conversation",
          "agents.Message")


@pytest.fixture
def objects(db, org):
    tool = factories.custom_tool(org, url="https://api.example.com/x")
    session = ToolBuilderSession.objects.create(organization=org, title="s")
    kit = ToolKit.objects.create(organization=org, session=session, name="k")
    draft = ToolDraft.objects.create(organization=org, kit=kit, name="d")
    conn = DatabaseConnection.objects.create(organization=org, name="shop", key_version=1, wrapped_key=b"x",
                                             ciphertext=b"x")
    mcp = McpConnection.objects.create(organization=org, name="fake", url="https://mcp.example.com/mcp")
    return {"tool": tool.pk, "session": session.pk, "kit": kit.pk, "draft": draft.pk, "conn": conn.pk, "mcp": mcp.pk}


def _draft_action(action: str) -> tuple[str, dict[str, str]]:
    return "api-tool-draft-action", {"pk": "draft", "action": f"={action}"}


# (method, url name, kwargs → key in `objects` or a literal, writes)
ENDPOINTS = [
    ("get", "api-tools", {}, False), ("post", "api-tools", {}, True),
    ("get", "api-tool", {"pk": "tool"}, False), ("patch", "api-tool", {"pk": "tool"}, True),
    ("delete", "api-tool", {"pk": "tool"}, True), ("post", "api-tool-test", {"pk": "tool"}, True),
    ("get", "api-tool-templates", {}, False),
    ("post", "api-tool-template-install", {"key": "=json_webhook"}, True),
    ("get", "api-tool-sessions", {}, False), ("post", "api-tool-sessions", {}, True),
    ("get", "api-tool-session", {"pk": "session"}, False),
    ("post", "api-tool-session-restart", {"pk": "session"}, True),
    ("post", "api-tool-session-messages", {"pk": "session"}, True),
    ("post", "api-tool-session-kits", {"pk": "session"}, True),
    ("post", "api-tool-kit-drafts", {"pk": "kit"}, True), ("post", "api-tool-kit-finalize", {"pk": "kit"}, True),
    ("get", "api-tool-draft", {"pk": "draft"}, False),
    ("post", *_draft_action("configure"), True),
    ("post", *_draft_action("test"), True),
    ("post", *_draft_action("warnings"), True),
    ("post", *_draft_action("samples"), True),
    ("get", "api-db-connections", {}, False), ("post", "api-db-connections", {}, True),
    ("get", "api-db-connection", {"pk": "conn"}, False), ("patch", "api-db-connection", {"pk": "conn"}, True),
    ("delete", "api-db-connection", {"pk": "conn"}, True),
    ("get", "api-mcp-connections", {}, False), ("post", "api-mcp-connections", {}, True),
    ("get", "api-mcp-connection", {"pk": "mcp"}, False), ("delete", "api-mcp-connection", {"pk": "mcp"}, True),
    ("post", "api-mcp-connection-check", {"pk": "mcp"}, True),
]


def _url(name: str, kwargs: dict[str, str], objects: dict) -> str:
    # "=value" is a literal path part; anything else names one of the fixture's objects.
    return reverse(name, kwargs={k: v[1:] if v.startswith("=") else str(objects[v]) for k, v in kwargs.items()})


def _ids(endpoints) -> list[str]:
    return [f"{method.upper()} {name}" + (f" {kwargs['action'][1:]}" if "action" in kwargs else "")
            for method, name, kwargs, _writes in endpoints]


def _refused(client, method: str, url: str, status: int) -> None:
    before = database_state(TABLES)
    response = getattr(client, method)(url, {}, format="json")
    assert response.status_code == status, response.content[:300]
    assert changed_tables(before, database_state(TABLES)) == [], "a refused request wrote"


@pytest.mark.parametrize(("method", "name", "kwargs", "writes"), ENDPOINTS, ids=_ids(ENDPOINTS))
def test_an_outsider_gets_not_found(objects, org, outsider, api_as, method, name, kwargs, writes):
    """The outsider names the victim organization: they are not a member, so it does not exist for them."""
    _refused(api_as(outsider, org), method, _url(name, kwargs, objects), 404)


BY_ID = [e for e in ENDPOINTS if any(not v.startswith("=") for v in e[2].values())]


@pytest.mark.parametrize(("method", "name", "kwargs", "writes"), BY_ID, ids=_ids(BY_ID))
def test_an_outsider_in_their_own_organization_cannot_reach_these_objects(
    objects, outsider, outsider_org, api_as, method, name, kwargs, writes
):
    _refused(api_as(outsider, outsider_org), method, _url(name, kwargs, objects), 404)


WRITES = [e for e in ENDPOINTS if e[3]]


@pytest.mark.parametrize(("method", "name", "kwargs", "writes"), WRITES, ids=_ids(WRITES))
def test_a_viewer_cannot_write(objects, org, viewer, api_as, method, name, kwargs, writes):
    _refused(api_as(viewer, org), method, _url(name, kwargs, objects), 403)


@pytest.mark.parametrize(("name", "key"), [("api-tool", "tool"), ("api-db-connection", "conn"),
                                           ("api-mcp-connection", "mcp")])
def test_the_snapshot_sees_what_an_allowed_request_changes(objects, org, builder, api_as, name, key):
    """The other side of the refusals above: a builder's delete of the same object is seen, so "unchanged" there
    is a finding, not a snapshot that looks at nothing."""
    before = database_state(TABLES)
    assert api_as(builder, org).delete(_url(name, {"pk": key}, objects)).status_code == 204
    assert changed_tables(before, database_state(TABLES))


def test_listing_tools_does_not_grow_queries_with_rows(db, org, builder, api_as):
    client = api_as(builder, org)
    factories.custom_tool(org, url="https://api.example.com/x", credential=factories.secret(org))
    with CaptureQueriesContext(connection) as few:
        assert client.get(reverse("api-tools")).status_code == 200
    for _ in range(8):
        factories.custom_tool(org, url="https://api.example.com/x", credential=factories.secret(org))
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(reverse("api-tools")).json()["results"]) == 9
    assert len(many.captured_queries) == len(few.captured_queries)


def test_a_session_with_kits_and_drafts_loads_in_constant_queries(objects, org, builder, api_as):
    client = api_as(builder, org)
    url = reverse("api-tool-session", kwargs={"pk": objects["session"]})
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    session = ToolBuilderSession.objects.get(pk=objects["session"])
    for i in range(4):
        kit = ToolKit.objects.create(organization=org, session=session, name=f"k{i}")
        ToolDraft.objects.create(organization=org, kit=kit, name="d")
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(url).json()["kits"]) == 5
    assert len(many.captured_queries) == len(few.captured_queries)
