"""The Toolbox's notice when an agent's MCP tools pass 30 (spec: tool search is worth turning on). It counts
each binding's allowed list, else the server's last listing; it never binds tool search by itself."""

from __future__ import annotations

import pytest

from agents.models import Agent
from capabilities.models import McpConnection
from tests import factories

pytestmark = pytest.mark.django_db


def _connection(org, n: int, name: str = "crm") -> McpConnection:
    return McpConnection.objects.create(organization=org, name=name, url="https://mcp.example.com/mcp",
                                        tools=[{"name": f"t{i}", "description": ""} for i in range(n)])


def _agent(org, owner, *bindings) -> Agent:
    agent = factories.published_agent(org, owner, name="Ops")
    Agent.objects.filter(pk=agent.pk).update(draft_spec={**agent.draft_spec, "capabilities": list(bindings)})
    return Agent.objects.get(pk=agent.pk)


def _mcp(*connections, **entry) -> dict:
    return {"id": "mcp", "config": {"connections": [{"connection_id": str(c.pk), **entry} for c in connections]}}


def test_past_30_mcp_tools_the_toolbox_says_so_with_a_token_estimate_and_a_button(client_as, org, owner):
    agent = _agent(org, owner, _mcp(_connection(org, 25), _connection(org, 12, name="wiki")))
    page = client_as(owner, org).get(f"/agents/{agent.pk}/").content.decode()
    notice = page.split("data-mcp-tool-notice", 1)[1].split("</div>", 1)[0]
    assert "37 tools, more than 30" in notice and "5550 tokens" in notice
    assert "data-bind-tool-search" in notice
    assert f'action="/agents/{agent.pk}/toolbox/tool_search"' in notice


def test_the_button_binds_tool_search_and_the_notice_goes(client_as, org, owner):
    agent = _agent(org, owner, _mcp(_connection(org, 40)))
    client = client_as(owner, org)
    response = client.post(f"/agents/{agent.pk}/toolbox/tool_search", {"enabled": "on"})
    assert response.status_code == 302
    agent.refresh_from_db()
    search = next(b for b in agent.draft_spec["capabilities"] if b["id"] == "tool_search")
    assert search["enabled"] is True and search["config"] == {}
    assert "data-mcp-tool-notice" not in client.get(f"/agents/{agent.pk}/").content.decode()


def test_an_allow_list_within_30_shows_no_notice(client_as, org, owner, builder):
    agent = _agent(org, owner, _mcp(_connection(org, 40), allowed_tools=["t1", "t2"]))
    assert "data-mcp-tool-notice" not in client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode()


def test_a_viewer_sees_the_notice_without_the_button(client_as, org, owner, viewer):
    agent = _agent(org, owner, _mcp(_connection(org, 31)))
    page = client_as(viewer, org).get(f"/agents/{agent.pk}/").content.decode()
    assert "data-mcp-tool-notice" in page and "data-bind-tool-search" not in page


def test_another_organizations_connection_is_not_counted_and_its_agent_is_a_404(
        client_as, org, owner, builder, outsider_org, outsider):
    foreign = _connection(outsider_org, 80)
    agent = _agent(org, owner, _mcp(foreign))
    assert "data-mcp-tool-notice" not in client_as(builder, org).get(f"/agents/{agent.pk}/").content.decode()
    theirs = _agent(outsider_org, outsider, _mcp(foreign))
    assert client_as(builder, org).get(f"/agents/{theirs.pk}/").status_code == 404


def test_a_malformed_connection_id_in_the_draft_does_not_break_the_page(client_as, org, owner, builder):
    agent = _agent(org, owner, {"id": "mcp", "config": {"connections": [{"connection_id": "not-a-uuid"}]}})
    response = client_as(builder, org).get(f"/agents/{agent.pk}/")
    assert response.status_code == 200 and "data-mcp-tool-notice" not in response.content.decode()
