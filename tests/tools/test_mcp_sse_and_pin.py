"""MCP over SSE against a local SSE server, and the address policy on MCP traffic: private addresses refused
on save and at run time unless the operator lists them, metadata always refused, every request pinned to
the address that was checked."""

from __future__ import annotations

import json

import pytest

from agenticos import netguard
from agents.models import Conversation, Message, Run, ToolCall
from agents.runner import execute
from agents.runner.frames import CollectingSink
from agents.runs import start_run
from capabilities.models import McpConnection
from tests import factories
from tests.capabilities.helpers import spec
from tests.runner.conftest import publish
from tests.tools.helpers import run_sync
from tests.tools.mcp_sse_server import SseMCPServer
from tests.tools.test_custom_tools_in_runs import tool_then_text

TOKEN = "sse-token-secret-4242"
METADATA = "169.254.169.254"
pytestmark = pytest.mark.usefixtures("tool_capabilities")


@pytest.fixture
def sse_server():
    server = SseMCPServer(token=TOKEN, extra_hosts=("mcp.internal",)).start()
    yield server
    server.stop()


@pytest.fixture
def dns(monkeypatch):
    """Names the test controls: netguard.resolve answers from this table (a list is consumed per lookup)."""
    table: dict[str, list[list[str]]] = {}
    real = netguard.resolve

    async def resolve(hostname: str) -> list[str]:
        answers = table.get(hostname)
        if answers is None:
            return await real(hostname)
        return answers.pop(0) if len(answers) > 1 else answers[0]

    monkeypatch.setattr(netguard, "resolve", resolve)
    return table


def _binding(connection, **entry):
    return {"id": "mcp", "config": {"connections": [{"connection_id": str(connection.pk), **entry}]}}


def _sse_connection(org, url, name="docs"):
    secret = factories.secret(org, value=TOKEN)
    return McpConnection.objects.create(organization=org, name=name, url=url, transport="sse", auth_secret=secret,
                                        tools=[{"name": "add", "description": ""}])


def _register(api_as, builder, org, url, transport="sse", name="docs", value=TOKEN):
    secret = factories.secret(org, value=value)
    return api_as(builder, org).post("/api/v1/mcp-connections", {
        "name": name, "url": url, "transport": transport, "auth_secret_id": str(secret.pk)}, format="json")


# --------------------------------------------------------------------------- SSE


@pytest.mark.urls("tests.tools.urls")
def test_an_sse_connection_is_checked_on_save_by_listing_its_tools(db, org, builder, api_as, sse_server,
                                                                   local_allowed):
    created = _register(api_as, builder, org, sse_server.url)
    assert created.status_code == 201, created.json()
    assert {t["name"] for t in created.json()["tools"]} == {"add", "big", "echo"}
    assert created.json()["transport"] == "sse"
    assert any(path == "/events" for _, path, _ in sse_server.seen)
    assert any(path.startswith("/messages/") for _, path, _ in sse_server.seen)
    assert TOKEN not in created.content.decode()
    wrong = _register(api_as, builder, org, sse_server.url, name="other", value="wrong-token-123456")
    assert wrong.status_code == 422 and "wrong-token" not in wrong.content.decode()
    assert McpConnection.objects.filter(organization=org).count() == 1


@pytest.mark.urls("tests.tools.urls")
def test_an_sse_server_registered_as_streamable_http_fails_the_check(db, org, builder, api_as, sse_server,
                                                                     local_allowed):
    """The transport is the one registered: nothing is guessed from the URL."""
    refused = _register(api_as, builder, org, sse_server.url, transport="streamable_http")
    assert refused.status_code == 422
    assert not McpConnection.objects.filter(organization=org).exists()


@pytest.mark.django_db(transaction=True)
def test_sse_tools_arrive_prefixed_and_run_through_an_agent_run(org, owner, sse_server, local_allowed, monkeypatch):
    connection = _sse_connection(org, sse_server.url)
    agent, version = publish(org, owner, capabilities=[_binding(connection, allowed_tools=["add", "echo"])])
    monkeypatch.setattr("agents.runner.assembly.build_model", lambda profile: tool_then_text("docs_add",
                                                                                          {"a": 20, "b": 22}))
    conv = Conversation.objects.create(organization=org, agent=agent, owner=owner, title="t")
    run = start_run(agent=agent, version=version, surface="web", prompt="Add them", user=owner,
                    acting_role="owner", conversation=conv, enqueue=False)
    sink = CollectingSink()
    execute(run.pk, sink)
    run = Run.objects.get(pk=run.pk)
    assert run.status == "completed", run.error
    call = ToolCall.objects.get(run=run)
    assert call.tool_name == "docs_add" and "42" in json.dumps(call.result)
    assert sse_server.calls == [("add", {"a": 20, "b": 22})]
    assert {auth for _, _, auth in sse_server.seen} == {f"Bearer {TOKEN}"}
    everything = json.dumps([list(Message.objects.filter(run=run).values("content", "parts")),
                             list(ToolCall.objects.filter(run=run).values("args", "result")), sink.frames],
                            default=str)
    assert TOKEN not in everything


def test_the_allow_list_hides_unlisted_sse_tools(db, org, sse_server, local_allowed):
    connection = _sse_connection(org, sse_server.url)
    outcome = run_sync(spec(_binding(connection, allowed_tools=["echo"])), [("docs_echo", {"text": "hi"})],
                       org_id=str(org.pk))
    assert [n for n in outcome.script.offered if n.startswith("docs_")] == ["docs_echo"]
    assert outcome.returns == ["echo: hi"]


# --------------------------------------------------------------------------- the address policy


def test_mcp_requests_go_to_the_pinned_address_with_the_original_host(db, org, sse_server, dns, settings):
    """`mcp.internal` exists only in the checked answer: the call works only if the client connects to it."""
    dns["mcp.internal"] = [["127.0.0.1"]]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["mcp.internal"]
    connection = _sse_connection(org, sse_server.url_for("mcp.internal"))
    outcome = run_sync(spec(_binding(connection)), [("docs_add", {"a": 1, "b": 2})], org_id=str(org.pk))
    assert outcome.returns == [3]
    assert sse_server.seen and {host for host, _, _ in sse_server.seen} == {f"mcp.internal:{sse_server.port}"}


@pytest.mark.urls("tests.tools.urls")
def test_a_private_mcp_address_is_refused_on_save_unless_the_operator_lists_it(db, org, builder, api_as,
                                                                               sse_server, settings):
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    refused = _register(api_as, builder, org, sse_server.url)
    assert refused.status_code == 422
    assert "TOOL_ALLOWED_PRIVATE_HOSTS" in refused.content.decode()
    assert sse_server.seen == []
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    assert _register(api_as, builder, org, sse_server.url).status_code == 201


def test_a_private_mcp_address_is_left_out_at_run_time_unless_listed(db, org, sse_server, settings):
    connection = _sse_connection(org, sse_server.url)
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = []
    outcome = run_sync(spec(_binding(connection)), [], org_id=str(org.pk))
    assert not any(n.startswith("docs_") for n in outcome.script.offered)
    assert sse_server.seen == []
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    outcome = run_sync(spec(_binding(connection)), [], org_id=str(org.pk))
    assert {"docs_add", "docs_big", "docs_echo"} <= set(outcome.script.offered)


@pytest.mark.urls("tests.tools.urls")
@pytest.mark.parametrize("url", [f"http://{METADATA}/events", "http://meta.internal/events"])
def test_a_metadata_address_is_refused_on_save_even_when_listed(db, org, builder, api_as, dns, settings, url):
    dns["meta.internal"] = [[METADATA]]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = [METADATA, "meta.internal", "169.254.0.0/16"]
    refused = _register(api_as, builder, org, url)
    assert refused.status_code == 422
    assert "metadata" in refused.content.decode()


def test_a_metadata_address_is_left_out_at_run_time_even_when_listed(db, org, dns, settings):
    dns["meta.internal"] = [[METADATA]]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = [METADATA, "meta.internal"]
    connection = _sse_connection(org, "http://meta.internal/events")
    outcome = run_sync(spec(_binding(connection)), [], org_id=str(org.pk))
    assert not any(n.startswith("docs_") for n in outcome.script.offered)


@pytest.mark.urls("tests.tools.urls")
def test_a_dns_answer_that_turns_to_metadata_after_the_check_is_refused_at_connect(db, org, builder, api_as,
                                                                                    sse_server, dns, settings):
    """The first lookup (the check) answers loopback, every later one the metadata address: the client's own
    requests are checked again, so nothing is sent anywhere."""
    dns["mcp.internal"] = [["127.0.0.1"], [METADATA]]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["mcp.internal"]
    refused = _register(api_as, builder, org, sse_server.url_for("mcp.internal"))
    assert refused.status_code == 422
    assert "metadata" in refused.content.decode()
    assert sse_server.seen == []


def test_a_dns_answer_that_turns_to_metadata_at_run_time_stops_the_run_before_anything_is_sent(db, org, sse_server,
                                                                                            dns, settings):
    """The assembly check passes on the first answer; the MCP client's own connect is checked again and refused."""
    dns["mcp.internal"] = [["127.0.0.1"], [METADATA]]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["mcp.internal"]
    connection = _sse_connection(org, sse_server.url_for("mcp.internal"))
    with pytest.raises(Exception) as raised:
        run_sync(spec(_binding(connection)), [("docs_add", {"a": 1, "b": 2})], org_id=str(org.pk))
    assert "cloud metadata address" in str(raised.value)
    assert sse_server.seen == [] and sse_server.calls == []
