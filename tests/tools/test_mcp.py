"""MCP connections against a local MCP server over streamable HTTP; prefixed tools, allow-lists,
approval on the prefixed id, tool_search deferral, REST isolation."""

from __future__ import annotations

import json

import pytest

from capabilities.mcp import services as mcp_services
from capabilities.models import McpConnection
from tests import factories
from tests.capabilities.helpers import spec
from tests.fakes.mcp_server import FakeMCPServer
from tests.tools.helpers import resume_real, run_real, run_sync

TOKEN = "mcp-token-secret-9999"
pytestmark = pytest.mark.usefixtures("tool_capabilities", "local_allowed")


@pytest.fixture
def mcp_server():
    server = FakeMCPServer(token=TOKEN, extra_tools=40).start()
    yield server
    server.stop()


@pytest.fixture
def connection(db, org, mcp_server):
    secret = factories.secret(org, value=TOKEN)
    return McpConnection.objects.create(organization=org, name="fake", url=mcp_server.url, auth_secret=secret,
                                        tools=[{"name": f"t{i}", "description": ""} for i in range(43)])


def _mcp(connection, **entry):
    return {"id": "mcp", "config": {"connections": [{"connection_id": str(connection.pk), **entry}]}}


def test_tools_arrive_prefixed_and_are_called_with_the_auth_header(connection, org, mcp_server):
    outcome = run_sync(spec(_mcp(connection, allowed_tools=["add", "echo"])), [("fake_add", {"a": 2, "b": 3})],
                       org_id=str(org.pk))
    assert outcome.script.offered == ["fake_add", "fake_echo"]
    assert outcome.returns == [5]
    assert mcp_server.calls == [("add", {"a": 2, "b": 3})]
    assert set(mcp_server.seen_auth) == {f"Bearer {TOKEN}"}
    assert TOKEN not in json.dumps(outcome.messages, default=str)


@pytest.mark.django_db(transaction=True)
def test_approval_keys_on_the_prefixed_tool_id(connection, org, owner, mcp_server, monkeypatch):
    # Through the runner's own gate (not a bare pydantic-ai Agent): the run parks, the Approval row names the
    # prefixed tool with its arguments, the server never hears of the call until a person approves it.
    from agenticos.models import AuditEvent, Membership
    from agenticos.tenancy import actor_for_membership
    from governance.models import Approval
    from governance.services import decide_approval

    binding = _mcp(connection, allowed_tools=["add", "weather"], tool_approval={"fake_weather": "required"})
    parked = run_real(org, owner, [binding], [("fake_weather", {"city": "Oslo"}), ("fake_add", {"a": 1, "b": 1})],
                      monkeypatch)
    assert parked.run.status == "awaiting_approval", parked.run.error
    (approval,) = Approval.objects.filter(run=parked.run)
    assert (approval.tool_name, approval.args, approval.status) == ("fake_weather", {"city": "Oslo"}, "pending")
    assert mcp_server.calls == []  # neither the gated call nor anything after it ran
    assert "tool_approval_required" in [f["type"] for f in parked.frames]

    actor = actor_for_membership(Membership.objects.select_related("user", "organization").get(user=owner))
    decide_approval(actor=actor, approval=approval, decision="approve")
    done = resume_real(parked, actor)
    assert done.run.status == "completed", done.run.error
    assert mcp_server.calls == [("weather", {"city": "Oslo"}), ("add", {"a": 1, "b": 1})]
    assert AuditEvent.objects.filter(action="approval.approved", organization=org).count() == 1
    assert TOKEN not in json.dumps(done.frames + parked.frames, default=str)


def test_without_tool_search_every_tool_is_visible_and_with_it_mcp_tools_are_deferred(connection, org):
    plain = run_sync(spec(_mcp(connection)), [], org_id=str(org.pk))
    assert len([n for n in plain.script.offered if n.startswith("fake_")]) == 43
    searching = run_sync(spec(_mcp(connection), {"id": "tool_search", "config": {"strategy": "keywords"}}),
                         [("search_tools", {"queries": ["invoices topic07"]})], org_id=str(org.pk))
    first = [t.name for t in searching.script.requests[0].function_tools]
    assert not any(n.startswith("fake_") for n in first)
    later = [t.name for t in searching.script.requests[-1].function_tools]
    assert "fake_tool_07" in later


def test_a_server_behind_a_private_address_is_skipped_unless_listed(connection, org, settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    outcome = run_sync(spec(_mcp(connection)), [], org_id=str(org.pk))
    assert not any(n.startswith("fake_") for n in outcome.script.offered)


def test_the_builder_warning_counts_allow_lists_else_the_last_listing(connection, org):
    assert mcp_services.tool_count_warning(spec(_mcp(connection)).model_dump(), org.pk)["tools"] == 43
    assert mcp_services.tool_count_warning(spec(_mcp(connection, allowed_tools=["add"])).model_dump(), org.pk) is None


@pytest.mark.urls("tests.tools.urls")
def test_a_connection_is_checked_on_save_by_listing_its_tools(db, org, builder, api_as, mcp_server):
    client = api_as(builder, org)
    secret = factories.secret(org, value=TOKEN)
    created = client.post("/api/v1/mcp-connections", {"name": "fake", "url": mcp_server.url,
                                                      "auth_secret_id": str(secret.pk)}, format="json")
    assert created.status_code == 201, created.json()
    assert {"add", "echo", "weather"} <= {t["name"] for t in created.json()["tools"]}
    assert TOKEN not in created.content.decode()
    wrong = factories.secret(org, value="wrong-token-000000")
    refused = client.post("/api/v1/mcp-connections", {"name": "other", "url": mcp_server.url,
                                                      "auth_secret_id": str(wrong.pk)}, format="json")
    assert refused.status_code == 422 and "wrong-token" not in refused.content.decode()
    pk = created.json()["id"]
    assert client.post(f"/api/v1/mcp-connections/{pk}/check", {}, format="json").status_code == 200


@pytest.mark.urls("tests.tools.urls")
def test_mcp_connections_are_invisible_to_other_organizations_and_closed_to_viewers(
    connection, org, viewer, outsider, outsider_org, api_as
):
    other = api_as(outsider, outsider_org)
    assert other.get(f"/api/v1/mcp-connections/{connection.pk}").status_code == 404
    assert other.post(f"/api/v1/mcp-connections/{connection.pk}/check", {}, format="json").status_code == 404
    assert other.delete(f"/api/v1/mcp-connections/{connection.pk}").status_code == 404
    weak = api_as(viewer, org)
    assert weak.get(f"/api/v1/mcp-connections/{connection.pk}").status_code == 200
    assert weak.delete(f"/api/v1/mcp-connections/{connection.pk}").status_code == 403
    assert weak.post("/api/v1/mcp-connections", {"name": "x", "url": "http://127.0.0.1/"}, format="json").status_code == 403
