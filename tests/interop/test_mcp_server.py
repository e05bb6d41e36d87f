"""/mcp through daphne with the real `mcp` client: the key's agents as `ask_<slug>` tools, a call runs one."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pydantic_ai.models.function import FunctionModel

from agents.models import Run, RunStatus
from tests.interop.conftest import api_key
from tests.runner.conftest import publish

pytestmark = pytest.mark.django_db(transaction=True)


async def _session(url: str, key: str, action):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await action(session)


def with_session(base: str, key: str, action):
    return asyncio.run(_session(f"{base}/mcp", key, action))


async def tools_of(session):
    return {tool.name: tool for tool in (await session.list_tools()).tools}


@pytest.fixture
def echo_model(scripted_model):
    async def stream(messages, info):
        yield "echo: "
        yield str(messages[-1].parts[-1].content)

    return scripted_model(FunctionModel(stream_function=stream, model_name="scripted"))


def test_the_keys_agents_are_tools_and_an_outsider_sees_none_of_them(
    live_server_url, org, owner, member, outsider, outsider_org
):
    helper, _ = publish(org, owner, name="Shop Helper", description="Answers questions about the shop.")
    private, _ = publish(org, owner, name="Private", visibility="private")
    publish(outsider_org, outsider, name="Theirs")
    tools = with_session(live_server_url, api_key(member, org), tools_of)
    assert set(tools) == {"ask_shop_helper"}  # the owner's private agent is not the member's
    assert tools["ask_shop_helper"].description == "Answers questions about the shop."
    assert tools["ask_shop_helper"].input_schema["required"] == ["message"]
    theirs = with_session(live_server_url, api_key(outsider, outsider_org), tools_of)
    assert theirs and not set(theirs) & {"ask_shop_helper", "ask_private"}


def test_calling_a_tool_runs_the_agent_and_returns_its_answer_and_run_id(
    live_server_url, org, owner, outsider, outsider_org, echo_model, celery_worker
):
    publish(org, owner, name="Shop Helper")

    async def ask(session):
        return await session.call_tool("ask_shop_helper", {"message": "do you ship?"})

    result = with_session(live_server_url, api_key(owner, org), ask)
    run = Run.objects.get()
    assert not result.is_error
    assert result.content[0].text == "echo: do you ship?"
    assert result.structured_content == {"answer": "echo: do you ship?", "run_id": str(run.pk), "status": "completed"}
    assert run.surface == "api" and run.status == RunStatus.COMPLETED

    refused = with_session(live_server_url, api_key(outsider, outsider_org), ask)
    assert refused.is_error and Run.objects.count() == 1  # another organization's agent is not a tool of theirs


def test_a_request_without_a_valid_key_is_401(live_server_url):
    response = httpx2.post(f"{live_server_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers={"Authorization": "Bearer aos_wrong"})
    assert response.status_code == 401 and "Bearer" in response.headers["WWW-Authenticate"]
