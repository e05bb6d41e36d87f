"""Connections in the console (console/connections.py over the MCP and database connection services):
a builder adds an MCP server (checked by listing its tools at a local MCP server, with the vault credential),
checks it again and deletes it; adds a database connection (a real connect to a second database on the embedded
PostgreSQL) with the permission's consequences spelled out, changes its permission and deletes it; remote A2A
agents are listed with a link to their page. Credentials and connection strings appear in no page; viewers see
and never change; outsiders get 404."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from capabilities.models import DatabaseConnection, McpConnection
from capabilities.remote_agents.models import RemoteAgent
from tests import factories
from tests.fakes.mcp_server import FakeMCPServer
from tests.tools.test_database import customer_dsn, socket_allowed  # noqa: F401

pytestmark = pytest.mark.django_db

PAGE = "/connections/"
TOKEN = "mcp-console-token-7f3e"


@pytest.fixture
def mcp_server(settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    server = FakeMCPServer(token=TOKEN).start()
    yield server
    server.stop()


def add_mcp(client, server, secret, **extra):
    return client.post(f"{PAGE}mcp/", {"name": "fake", "url": server.url, "transport": "streamable_http",
                                      "auth_secret_id": str(secret.pk) if secret else "",
                                      "auth_header": "Authorization", "auth_prefix": "Bearer ", **extra})


# ------------------------------------------------------------------ MCP servers


def test_a_builder_adds_an_mcp_server_which_is_checked_by_listing_its_tools(client_as, org, builder, mcp_server):
    secret = factories.secret(org, name="mcp key", value=TOKEN)
    client = client_as(builder, org)
    assert b"data-mcp-add" in client.get(PAGE).content

    response = add_mcp(client, mcp_server, secret)

    conn = McpConnection.objects.get(organization=org)
    assert response.status_code == 302 and response["Location"] == f"{PAGE}#mcp-{conn.pk}"
    assert conn.auth_secret_id == secret.pk and {t["name"] for t in conn.tools} >= {"add", "echo"}
    assert any(auth == f"Bearer {TOKEN}" for auth in mcp_server.seen_auth)
    html = client.get(PAGE).content.decode()
    assert f'data-mcp-connection="{conn.pk}"' in html and "<code translate=\"no\">fake_add</code>" in html
    assert "mcp key" in html and TOKEN not in html

    checked = client.post(f"{PAGE}mcp/{conn.pk}/check")
    assert checked.status_code == 302
    assert AuditEvent.objects.filter(organization=org, action="mcp_connection.checked").count() == 1
    assert client.post(f"{PAGE}mcp/{conn.pk}/delete").status_code == 302
    assert not McpConnection.objects.filter(pk=conn.pk).exists()


def test_a_server_that_refuses_the_credential_is_not_saved_and_its_address_is_not_given_back(
        client_as, org, builder, mcp_server):
    wrong = factories.secret(org, name="wrong", value="not-the-token")
    response = add_mcp(client_as(builder, org), mcp_server, wrong)
    html = response.content.decode()
    assert response.status_code == 422 and 'data-error-field="url"' in html
    assert mcp_server.url not in html.split("data-mcp-add", 1)[1]  # the form does not echo the address
    assert not McpConnection.objects.exists()


def test_a_metadata_address_is_refused_before_any_connection(client_as, org, builder):
    response = client_as(builder, org).post(f"{PAGE}mcp/", {"name": "meta", "url": "http://169.254.169.254/mcp",
                                                             "transport": "streamable_http"})
    assert response.status_code == 422 and not McpConnection.objects.exists()


# ------------------------------------------------------------------ database connections


def test_a_builder_adds_a_database_with_the_consequences_spelled_out_and_changes_its_permission(
        client_as, org, builder, customer_dsn, socket_allowed):  # noqa: F811
    client = client_as(builder, org)
    page = client.get(PAGE).content.decode()
    assert 'data-consequence="read"' in page and "READ ONLY" in page
    assert 'data-consequence="full"' in page and "drop tables" in page

    response = client.post(f"{PAGE}databases/", {"name": "shop", "dsn": customer_dsn, "permission": "read"})

    conn = DatabaseConnection.objects.get(organization=org)
    assert response.status_code == 302 and conn.permission == "read"
    html = client.get(PAGE).content.decode()
    assert f'data-db-connection="{conn.pk}"' in html and customer_dsn not in html

    assert client.post(f"{PAGE}databases/{conn.pk}/", {"permission": "write", "row_cap": "50"}).status_code == 302
    conn.refresh_from_db()
    assert conn.permission == "write" and conn.row_cap == 50
    assert client.post(f"{PAGE}databases/{conn.pk}/delete").status_code == 302
    assert not DatabaseConnection.objects.exists()


def test_a_permission_that_would_break_an_agents_budget_is_refused(client_as, org, builder, owner, customer_dsn,
                                                                   socket_allowed):  # noqa: F811
    client = client_as(builder, org)
    client.post(f"{PAGE}databases/", {"name": "shop", "dsn": customer_dsn, "permission": "read"})
    conn = DatabaseConnection.objects.get(organization=org)
    tools = [factories.custom_tool(org, url="https://api.example.com/x") for _ in range(20)]
    agent = factories.published_agent(org, owner, name="Heavy")
    agent.draft_spec = {**agent.draft_spec, "custom_tool_ids": [str(t.pk) for t in tools],
                        "capabilities": [{"id": "database", "config": {"connection_ids": [str(conn.pk)]}}]}
    agent.save(update_fields=["draft_spec"])
    response = client.post(f"{PAGE}databases/{conn.pk}/", {"permission": "full"})
    assert response.status_code == 422 and "27 of 25" in response.content.decode()
    conn.refresh_from_db()
    assert conn.permission == "read"


def test_a_bad_connection_string_is_not_saved_nor_shown_again(client_as, org, builder, socket_allowed):  # noqa: F811
    dsn = "postgresql://someone:hunter2-pw@127.0.0.1:1/nowhere"
    response = client_as(builder, org).post(f"{PAGE}databases/", {"name": "shop", "dsn": dsn, "permission": "read"})
    html = response.content.decode()
    assert response.status_code == 422 and 'data-error-field="dsn"' in html
    assert "hunter2-pw" not in html and not DatabaseConnection.objects.exists()


# ------------------------------------------------------------------ remote agents, viewers, outsiders


def test_remote_agents_are_listed_with_a_link_to_their_page(client_as, org, viewer):
    row = RemoteAgent.objects.create(organization=org, name="Weather Desk", card_url="https://a.example/card",
                                     endpoint_url="https://a.example/rpc", card={})
    html = client_as(viewer, org).get(PAGE).content.decode()
    assert f'href="/remote-agents/{row.pk}/"' in html and 'href="/remote-agents/"' in html


def test_a_viewer_sees_connections_and_every_change_is_403(client_as, org, viewer, mcp_server):
    conn = McpConnection.objects.create(organization=org, name="fake", url=mcp_server.url, tools=[])
    client = client_as(viewer, org)
    html = client.get(PAGE).content.decode()
    assert "data-read-only" in html and "data-mcp-add" not in html and "data-db-add" not in html
    assert add_mcp(client, mcp_server, None, name="other").status_code == 403
    assert client.post(f"{PAGE}mcp/{conn.pk}/check").status_code == 403
    assert client.post(f"{PAGE}mcp/{conn.pk}/delete").status_code == 403
    assert client.post(f"{PAGE}databases/", {"name": "x", "dsn": "postgresql://a@b/c"}).status_code == 403
    assert McpConnection.objects.filter(organization=org).count() == 1 and mcp_server.seen_auth == []


def test_an_outsider_sees_nothing_and_gets_404(client_as, org, outsider_org, outsider, mcp_server):
    conn = McpConnection.objects.create(organization=org, name="secretsrv", url=mcp_server.url, tools=[])
    client = client_as(outsider, outsider_org)
    assert "secretsrv" not in client.get(PAGE).content.decode()
    assert client.post(f"{PAGE}mcp/{conn.pk}/check").status_code == 404
    assert client.post(f"{PAGE}mcp/{conn.pk}/delete").status_code == 404
    assert client.post(f"{PAGE}databases/{conn.pk}/", {"permission": "full"}).status_code == 404
    assert McpConnection.objects.filter(pk=conn.pk).exists() and mcp_server.seen_auth == []
