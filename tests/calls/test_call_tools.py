"""A call's own tools (calls.tools): live capabilities in the session.update the fake received, run through the
text runner's approval gate, their results checked by the guardrails; the catalog's mappings; the agent's
realtime profile."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from channels.db import database_sync_to_async

from agenticos.models import AuditEvent
from agents.models import ModelProfile, ToolCall
from capabilities.models import McpConnection
from governance.models import Approval
from knowledge.models import Skill
from tests import factories
from tests.calls.test_call_socket import CHUNK, TIMEOUT, dial, frames_until, realtime_profile, refused
from tests.fakes.mcp_server import FakeMCPServer
from tests.fakes.realtime_server import Reply, realtime_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)
MCP_TOKEN = "mcp-token-call-7777"


@pytest.fixture
def fake(realtime_server, settings):  # noqa: F811
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    realtime_server.reset()
    return realtime_server


@pytest.fixture(scope="module")
def mcp_server():
    server = FakeMCPServer(token=MCP_TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def mcp(mcp_server):
    mcp_server.calls.clear()
    return mcp_server


def connection(org, server):
    secret = factories.secret(org, value=MCP_TOKEN)
    return McpConnection.objects.create(organization=org, name="fake", url=server.url, auth_secret=secret,
                                        tools=[{"name": n, "description": ""} for n in ("add", "echo", "weather")])


def mcp_binding(conn, **entry):
    return {"id": "mcp", "config": {"connections": [{"connection_id": str(conn.pk), **entry}]}}


async def agent_with(org, owner, fake, *capabilities, **spec):
    agent = await database_sync_to_async(factories.published_agent)(org, owner, capabilities=list(capabilities),
                                                                    **spec)
    await database_sync_to_async(realtime_profile)(org, fake)
    return agent


def outputs(fake) -> list[dict]:
    return [e["item"] for e in fake.received
            if e["type"] == "conversation.item.create" and e["item"]["type"] == "function_call_output"]


def told(fake) -> list[str]:
    return [e["item"]["content"][0]["text"] for e in fake.received
            if e["type"] == "conversation.item.create" and e["item"]["type"] == "message"]


async def told_soon(fake) -> list[str]:
    """What the call told the provider, once it arrived: the person's `tool_done` frame and the message to the
    provider leave on two sockets, and under load the frame can win."""
    for _ in range(200):
        if told(fake):
            break
        await asyncio.sleep(0.05)
    return told(fake)


def session_tools(fake) -> dict[str, dict]:
    return {tool["name"]: tool for tool in fake.sessions[0]["tools"]}


async def test_a_live_capabilitys_tool_is_fixed_in_the_session_and_runs_inside_the_call(org, owner, fake, mcp):
    conn = await database_sync_to_async(connection)(org, mcp)
    agent = await agent_with(org, owner, fake, mcp_binding(conn, allowed_tools=["add", "echo"]))
    fake.replies.extend([Reply.call("fake_add", a=2, b=3), Reply.say("That makes five.")])

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "turn", count=2)
    await communicator.disconnect()

    tools = session_tools(fake)
    assert set(tools) == {"fake_add", "fake_echo"} and started["data"]["tools"] == ["fake_add", "fake_echo"]
    assert tools["fake_add"]["type"] == "function"
    assert set(tools["fake_add"]["parameters"]["properties"]) == {"a", "b"}
    assert mcp.calls == [("add", {"a": 2, "b": 3})]
    (output,) = outputs(fake)
    assert json.loads(output["output"]) == 5
    done = next(f["data"] for f in frames if f["type"] == "tool_done")
    assert done == {"call_id": output["call_id"], "name": "fake_add", "status": "done"}
    assert frames[-1]["data"]["text"] == "That makes five."
    assert MCP_TOKEN not in json.dumps(fake.received + frames)


async def test_tool_search_is_dropped_and_the_mcp_tools_are_given_to_the_call_directly(org, owner, fake, mcp):
    conn = await database_sync_to_async(connection)(org, mcp)
    agent = await agent_with(org, owner, fake, mcp_binding(conn),
                             {"id": "tool_search", "config": {"strategy": "keywords"}})

    communicator = await dial(owner, org, agent.pk)
    await communicator.receive_from(timeout=TIMEOUT)
    await communicator.disconnect()

    tools = session_tools(fake)
    assert {"fake_add", "fake_echo", "fake_weather"} <= set(tools)
    assert not any("search" in name for name in tools)
    assert not any(tool.get("defer_loading") for tool in tools.values())


async def test_follow_ups_and_the_channels_tools_are_not_in_a_call(org, owner, fake):
    agent = await agent_with(org, owner, fake, {"id": "follow_ups"}, {"id": "charts"})

    communicator = await dial(owner, org, agent.pk)
    started = json.loads(await communicator.receive_from(timeout=TIMEOUT))
    await communicator.disconnect()

    tools = session_tools(fake)
    assert "create_chart" in tools  # a "tal cual" capability beside them is there
    assert not {"suggest_next_steps", "propose_setup"} & set(tools)
    assert not {"get_channel_info", "list_channel_members", "read_channel_history"} & set(tools)
    assert "follow_ups" in started["data"]["never"]


async def test_thinking_becomes_the_realtime_models_reasoning_setting(org, owner, fake):
    reasoning = await database_sync_to_async(factories.model_profile)(org, "openai", "gpt-5", label="Reasoning",
                                                                      api_key="sk-text-0000")
    thinking = await agent_with(org, owner, fake, {"id": "thinking", "config": {"effort": "xhigh"}},
                                model_profile_id=str(reasoning.pk))
    plain = await database_sync_to_async(factories.published_agent)(org, owner, name="Plain")

    for agent in (thinking, plain):
        communicator = await dial(owner, org, agent.pk)
        await communicator.receive_from(timeout=TIMEOUT)
        await communicator.disconnect()

    assert fake.sessions[0]["reasoning"] == {"effort": "high"}
    assert "reasoning" not in fake.sessions[1]
    assert "thinking" not in json.dumps(fake.sessions[0]["tools"])


async def test_a_skill_loads_as_instructions_on_demand_without_its_read_tool(org, owner, fake):
    skill = await database_sync_to_async(Skill.objects.create)(
        organization=org, name="refunds", description="How we answer a refund request.",
        body="Always offer store credit first; a refund takes five days.")
    agent = await agent_with(org, owner, fake, {"id": "skills"}, skill_ids=[str(skill.pk)])
    fake.replies.extend([Reply(function="load_skill", arguments={"name": "refunds"}), Reply.say("Store credit first.")])

    communicator = await dial(owner, org, agent.pk)
    await communicator.receive_from(timeout=TIMEOUT)
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    await frames_until(communicator, "turn", count=2)
    await communicator.disconnect()

    tools = session_tools(fake)
    assert set(tools) == {"load_skill"}
    assert tools["load_skill"]["parameters"]["properties"]["name"]["enum"] == ["refunds"]
    assert "How we answer a refund request." in tools["load_skill"]["description"]
    assert "store credit" not in fake.sessions[0]["instructions"]  # on demand, not up front
    (output,) = outputs(fake)
    assert "Always offer store credit first" in json.loads(output["output"])["instructions"]


async def test_a_gated_tool_waits_for_the_callers_approval_card_then_runs(org, owner, fake, mcp):
    conn = await database_sync_to_async(connection)(org, mcp)
    agent = await agent_with(org, owner, fake, mcp_binding(
        conn, allowed_tools=["weather"], tool_approval={"fake_weather": "required"}))
    fake.replies.extend([Reply.call("fake_weather", city="Oslo"), Reply.say("I need your approval for that."),
                         Reply.say("It is sunny in Oslo.")])

    communicator = await dial(owner, org, agent.pk)
    await communicator.receive_from(timeout=TIMEOUT)
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "approval")
    card = frames[-1]["data"]
    frames += await frames_until(communicator, "turn")
    assert mcp.calls == []  # nothing ran before the decision
    await communicator.send_json_to({"type": "decide", "call_id": "not-waiting", "decision": "approve"})
    wrong = (await frames_until(communicator, "error"))[-1]
    await communicator.send_json_to({"type": "decide", "call_id": card["call_id"], "decision": "approve"})
    after = await frames_until(communicator, "turn")
    await communicator.disconnect()

    assert card["name"] == "fake_weather" and json.loads(card["args"]) == {"city": "Oslo"} and card["can_decide"]
    assert wrong["data"]["code"] == "not_found"
    (waiting,) = outputs(fake)
    assert json.loads(waiting["output"])["status"] == "waiting_for_approval"
    assert [t for t in (f["data"]["text"] for f in frames if f["type"] == "turn")][-1] == \
        "I need your approval for that."
    assert mcp.calls == [("weather", {"city": "Oslo"})]
    assert "approved fake_weather" in told(fake)[0] and "Oslo" in told(fake)[0]
    assert after[-1]["data"]["text"] == "It is sunny in Oslo."
    # The gated call parked as a text run's does: an Approval of the call's run, decided through the one service.
    event = await database_sync_to_async(AuditEvent.objects.get)(organization=org, action="approval.approved")
    approval = await database_sync_to_async(Approval.objects.get)(organization=org)
    assert event.actor_id == owner.pk and event.target_type == "approval" and event.details["via"] == "call"
    assert (approval.tool_call_id, approval.status, approval.decided_by_id) == (card["call_id"], "approved", owner.pk)
    assert str(approval.pk) == card["approval_id"]
    call = await database_sync_to_async(ToolCall.objects.get)(run_id=approval.run_id)
    assert (call.tool_name, call.status, call.args) == ("fake_weather", "ok", {"city": "Oslo"})
    assert "Oslo" in json.dumps(call.result)


async def test_a_rejected_tool_never_runs_and_the_call_is_told(org, owner, fake, mcp):
    conn = await database_sync_to_async(connection)(org, mcp)
    agent = await agent_with(org, owner, fake, mcp_binding(
        conn, allowed_tools=["weather"], tool_approval={"fake_weather": "required"}))
    fake.replies.extend([Reply.call("fake_weather", city="Oslo"), Reply.say("Waiting."), Reply.say("Fine.")])

    communicator = await dial(owner, org, agent.pk)
    await communicator.receive_from(timeout=TIMEOUT)
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    card = (await frames_until(communicator, "approval"))[-1]["data"]
    await communicator.send_json_to({"type": "decide", "call_id": card["call_id"], "decision": "reject"})
    frames = await frames_until(communicator, "tool_done")
    said = await told_soon(fake)
    await communicator.disconnect()

    assert frames[-1]["data"]["status"] == "rejected"
    assert mcp.calls == []
    assert "declined" in said[0]
    assert await database_sync_to_async(AuditEvent.objects.filter(action="approval.rejected").count)() == 1


async def test_a_member_who_may_not_approve_sees_the_card_and_the_tool_does_not_run(org, owner, member, fake, mcp):
    conn = await database_sync_to_async(connection)(org, mcp)
    agent = await agent_with(org, owner, fake, mcp_binding(
        conn, allowed_tools=["weather"], tool_approval={"fake_weather": "required"}))
    fake.replies.extend([Reply.call("fake_weather", city="Oslo"), Reply.say("An admin must approve that.")])

    communicator = await dial(member, org, agent.pk)
    await communicator.receive_from(timeout=TIMEOUT)
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    card = (await frames_until(communicator, "approval"))[-1]["data"]
    await communicator.send_json_to({"type": "decide", "call_id": card["call_id"], "decision": "approve"})
    refused_decision = (await frames_until(communicator, "error"))[-1]
    await communicator.disconnect()

    assert card["can_decide"] is False
    assert refused_decision["data"]["code"] == "forbidden"
    assert mcp.calls == []
    assert "cannot approve" in json.loads(outputs(fake)[0]["output"])["error"]
    assert not await database_sync_to_async(AuditEvent.objects.filter(action__startswith="approval.").exists)()
    # It waited for an approver on the Approvals page while the call lasted; the call's end expired it.
    approval = await database_sync_to_async(Approval.objects.get)(organization=org)
    assert approval.status == "expired" and approval.decided_by_id is None
    call = await database_sync_to_async(ToolCall.objects.get)(run_id=approval.run_id)
    assert call.status == "unfinished"


async def test_an_approver_on_the_approvals_api_lets_a_members_gated_call_run_during_the_call(
        org, owner, member, outsider, outsider_org, fake, mcp, api_as):
    conn = await database_sync_to_async(connection)(org, mcp)
    agent = await agent_with(org, owner, fake, mcp_binding(
        conn, allowed_tools=["weather"], tool_approval={"fake_weather": "required"}))
    fake.replies.extend([Reply.call("fake_weather", city="Oslo"), Reply.say("An approver must allow that."),
                         Reply.say("It is sunny in Oslo.")])

    communicator = await dial(member, org, agent.pk)
    await communicator.receive_from(timeout=TIMEOUT)
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    card = (await frames_until(communicator, "approval"))[-1]["data"]
    await frames_until(communicator, "turn")  # the agent says an approver must allow it
    path = f"/api/v1/approvals/{card['approval_id']}"
    outsider_try = await database_sync_to_async(
        lambda: api_as(outsider, outsider_org).post(path, {"decision": "approve"}, format="json"))()
    member_try = await database_sync_to_async(
        lambda: api_as(member, org).post(path, {"decision": "approve"}, format="json"))()
    assert mcp.calls == []
    decided = await database_sync_to_async(
        lambda: api_as(owner, org).post(path, {"decision": "approve"}, format="json"))()
    done = (await frames_until(communicator, "tool_done"))[-1]["data"]
    after = await frames_until(communicator, "turn")
    await communicator.disconnect()

    assert outsider_try.status_code == 404 and member_try.status_code == 403
    assert decided.status_code == 200 and decided.json()["status"] == "approved"
    assert done == {"call_id": card["call_id"], "name": "fake_weather", "status": "done"}
    assert mcp.calls == [("weather", {"city": "Oslo"})]
    assert after[-1]["data"]["text"] == "It is sunny in Oslo."
    event = await database_sync_to_async(AuditEvent.objects.get)(organization=org, action="approval.approved")
    assert event.actor_id == owner.pk
    call = await database_sync_to_async(ToolCall.objects.get)(tool_call_id=card["call_id"])
    assert call.status == "ok" and "Oslo" in json.dumps(call.result)


async def test_the_guardrails_check_a_tools_result_before_the_call_reads_it(org, owner, fake, mcp):
    conn = await database_sync_to_async(connection)(org, mcp)
    agent = await agent_with(org, owner, fake, mcp_binding(conn, allowed_tools=["echo"]), {
        "id": "guardrails", "config": {"redact_pii_tool": True, "blocked_keywords_tool": "project nightingale"}})
    fake.replies.extend([Reply.call("fake_echo", text="Mail bob@example.com"), Reply.say("Done."),
                         Reply.call("fake_echo", text="Project Nightingale plans"), Reply.say("Withheld.")])

    communicator = await dial(owner, org, agent.pk)
    await communicator.receive_from(timeout=TIMEOUT)
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    await frames_until(communicator, "turn", count=2)
    fake.heard.append("And the other one?")
    await communicator.send_json_to({"type": "audio", "audio": CHUNK})
    frames = await frames_until(communicator, "tool_done")
    await communicator.disconnect()

    redacted, blocked = (o["output"] for o in outputs(fake))
    assert "bob@example.com" not in redacted and "[redacted" in redacted
    assert "Nightingale" not in blocked and "withheld" in json.loads(blocked)["error"]
    assert frames[-1]["data"]["status"] == "blocked"
    assert "Nightingale" not in json.dumps(frames)


async def test_the_agent_names_its_realtime_profile_and_others_default_to_the_first(org, owner, fake):
    await database_sync_to_async(realtime_profile)(org, fake)  # "Voice": the first by label
    named = await database_sync_to_async(factories.model_profile)(
        org, "openai", "gpt-realtime-mini", label="Zed voice", api_key=fake_key(), base_url=fake.base_url,
        kind=ModelProfile.Kind.REALTIME)
    chosen = await database_sync_to_async(factories.published_agent)(org, owner, name="Chosen",
                                                                     realtime_profile_id=str(named.pk))
    default = await database_sync_to_async(factories.published_agent)(org, owner, name="Default")

    for agent in (chosen, default):
        communicator = await dial(owner, org, agent.pk)
        await communicator.receive_from(timeout=TIMEOUT)
        await communicator.disconnect()

    models = [parse_qs(urlsplit(path).query)["model"] for path in fake.paths]
    assert models == [["gpt-realtime-mini"], ["gpt-realtime"]]


async def test_publish_refuses_a_realtime_profile_that_is_not_one_of_the_organizations(
        org, owner, outsider_org, fake):
    from agenticos.errors import Invalid

    chat = await database_sync_to_async(ModelProfile.objects.create)(organization=org, label="Chat", provider="openai",
                                                                     model="gpt-4o")
    theirs = await database_sync_to_async(ModelProfile.objects.create)(
        organization=outsider_org, label="Theirs", provider="openai", model="gpt-realtime",
        kind=ModelProfile.Kind.REALTIME)
    for profile in (chat, theirs):
        with pytest.raises(Invalid) as caught:
            await database_sync_to_async(factories.published_agent)(org, owner, realtime_profile_id=str(profile.pk))
        assert "realtime_profile_id" in json.dumps(caught.value.details)


async def test_a_call_whose_named_profile_is_gone_is_refused_before_the_provider(org, owner, fake):
    await database_sync_to_async(realtime_profile)(org, fake)  # another one exists: the call does not fall back
    named = await database_sync_to_async(factories.model_profile)(
        org, "openai", "gpt-realtime-mini", label="Zed voice", api_key=fake_key(), base_url=fake.base_url,
        kind=ModelProfile.Kind.REALTIME)
    agent = await database_sync_to_async(factories.published_agent)(org, owner, realtime_profile_id=str(named.pk))
    await database_sync_to_async(ModelProfile.objects.filter(pk=named.pk).delete)()

    error = await refused(await dial(owner, org, agent.pk))

    assert error["data"]["code"] == "no_realtime_model"
    assert fake.connections == 0


def fake_key() -> str:
    from tests.fakes.realtime_server import KEY

    return KEY
