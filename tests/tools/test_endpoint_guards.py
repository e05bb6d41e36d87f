"""Every endpoint of /api/v1/tools, tool-templates, tool-kits, db-connections and mcp-connections: an outsider
gets 404, a viewer gets 403 on writes; list endpoints do not grow queries with rows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from capabilities.models import DatabaseConnection, McpConnection, ToolBuilderSession, ToolDraft, ToolKit
from tests import factories

pytestmark = pytest.mark.urls("tests.tools.urls")


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


ENDPOINTS = [
    ("get", "/api/v1/tools/", False), ("post", "/api/v1/tools/", True),
    ("get", "/api/v1/tools/{tool}/", False), ("patch", "/api/v1/tools/{tool}/", True),
    ("delete", "/api/v1/tools/{tool}/", True), ("post", "/api/v1/tools/{tool}/test/", True),
    ("get", "/api/v1/tool-templates/", False), ("post", "/api/v1/tool-templates/json_webhook/install/", True),
    ("get", "/api/v1/tool-kits/sessions/", False), ("post", "/api/v1/tool-kits/sessions/", True),
    ("get", "/api/v1/tool-kits/sessions/{session}/", False),
    ("post", "/api/v1/tool-kits/sessions/{session}/restart/", True),
    ("post", "/api/v1/tool-kits/sessions/{session}/messages/", True),
    ("post", "/api/v1/tool-kits/sessions/{session}/kits/", True),
    ("post", "/api/v1/tool-kits/{kit}/drafts/", True), ("post", "/api/v1/tool-kits/{kit}/finalize/", True),
    ("get", "/api/v1/tool-kits/drafts/{draft}/", False),
    ("post", "/api/v1/tool-kits/drafts/{draft}/configure/", True),
    ("post", "/api/v1/tool-kits/drafts/{draft}/test/", True),
    ("post", "/api/v1/tool-kits/drafts/{draft}/warnings/", True),
    ("post", "/api/v1/tool-kits/drafts/{draft}/samples/", True),
    ("get", "/api/v1/db-connections/", False), ("post", "/api/v1/db-connections/", True),
    ("get", "/api/v1/db-connections/{conn}/", False), ("patch", "/api/v1/db-connections/{conn}/", True),
    ("delete", "/api/v1/db-connections/{conn}/", True),
    ("get", "/api/v1/mcp-connections/", False), ("post", "/api/v1/mcp-connections/", True),
    ("get", "/api/v1/mcp-connections/{mcp}/", False), ("delete", "/api/v1/mcp-connections/{mcp}/", True),
    ("post", "/api/v1/mcp-connections/{mcp}/check/", True),
]


@pytest.mark.parametrize("method,path,writes", ENDPOINTS)
def test_an_outsider_gets_not_found(objects, org, outsider, api_as, method, path, writes):
    """The outsider names the victim organization: they are not a member, so it does not exist for them."""
    response = getattr(api_as(outsider, org), method)(path.format(**objects), {}, format="json")
    assert response.status_code == 404


@pytest.mark.parametrize("method,path,writes", [e for e in ENDPOINTS if "{" in e[1]])
def test_an_outsider_in_their_own_organization_cannot_reach_these_objects(
    objects, outsider, outsider_org, api_as, method, path, writes
):
    response = getattr(api_as(outsider, outsider_org), method)(path.format(**objects), {}, format="json")
    assert response.status_code == 404


@pytest.mark.parametrize("method,path,writes", [e for e in ENDPOINTS if e[2]])
def test_a_viewer_cannot_write(objects, org, viewer, api_as, method, path, writes):
    response = getattr(api_as(viewer, org), method)(path.format(**objects), {}, format="json")
    assert response.status_code == 403


def test_listing_tools_does_not_grow_queries_with_rows(db, org, builder, api_as):
    client = api_as(builder, org)
    factories.custom_tool(org, url="https://api.example.com/x", credential=factories.secret(org))
    with CaptureQueriesContext(connection) as few:
        assert client.get("/api/v1/tools/").status_code == 200
    for _ in range(8):
        factories.custom_tool(org, url="https://api.example.com/x", credential=factories.secret(org))
    with CaptureQueriesContext(connection) as many:
        assert len(client.get("/api/v1/tools/").json()["results"]) == 9
    assert len(many.captured_queries) == len(few.captured_queries)


def test_a_session_with_kits_and_drafts_loads_in_constant_queries(objects, org, builder, api_as):
    client = api_as(builder, org)
    url = f"/api/v1/tool-kits/sessions/{objects['session']}/"
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    session = ToolBuilderSession.objects.get(pk=objects["session"])
    for i in range(4):
        kit = ToolKit.objects.create(organization=org, session=session, name=f"k{i}")
        ToolDraft.objects.create(organization=org, kit=kit, name="d")
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(url).json()["kits"]) == 5
    assert len(many.captured_queries) == len(few.captured_queries)
