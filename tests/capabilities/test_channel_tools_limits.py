"""channel_tools' default_limit (spec: 20, 1–200): what a lookup returns when the model asks for no number."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from capabilities.channel_tools.capability import ChannelToolsConfig
from tests.capabilities.helpers import deps, run, spec

TOOLS = ["list_channel_members", "read_channel_history", "search_channels"]


@pytest.fixture
def platform_calls(monkeypatch):
    """The platform side (the outside world) answers with what it was asked, and records it."""
    calls: list[tuple[str, tuple]] = []

    async def fake_call(ctx, fn_name, *args):
        calls.append((fn_name, args))
        return [] if fn_name != "members" else ["Ada"]

    class Thread:  # read_channel_history reads the arriving thread through the bot's client, not `_call`
        def thread_history(self, chat_id, thread, limit):
            calls.append(("history", (limit,)))
            return []

    monkeypatch.setattr("capabilities.channel_tools.capability._call", fake_call)
    monkeypatch.setattr("capabilities.channel_tools.capability._channel",
                        lambda run_id: (Thread(), {"chat_id": "C1", "thread": "1700000000.000100"}))
    return calls


def test_default_limit_is_20_and_only_1_to_200_is_accepted():
    assert ChannelToolsConfig().default_limit == 20
    assert ChannelToolsConfig(default_limit=200).default_limit == 200
    for bad in (0, 201):
        with pytest.raises(ValidationError):
            ChannelToolsConfig(default_limit=bad)


async def test_without_a_number_every_lookup_uses_the_bindings_default_limit(platform_calls):
    the_spec = spec({"id": "channel_tools", "config": {"tools": TOOLS, "default_limit": 7}})
    await run(the_spec, [("list_channel_members", {}), ("read_channel_history", {}),
                         ("search_channels", {"query": "ops"})], deps(surface="slack"))
    assert platform_calls == [("members", (7,)), ("history", (7,)), ("search_channels", ("ops", 7))]


async def test_an_unset_default_is_20_and_the_models_number_is_capped_at_200(platform_calls):
    the_spec = spec({"id": "channel_tools", "config": {"tools": TOOLS}})
    await run(the_spec, [("list_channel_members", {}), ("read_channel_history", {"limit": 5000}),
                         ("search_channels", {"query": "ops", "limit": 3})], deps(surface="mattermost"))
    assert platform_calls == [("members", (20,)), ("history", (200,)), ("search_channels", ("ops", 3))]


async def test_the_tool_texts_say_the_default_and_the_cap(platform_calls):
    outcome = await run(spec({"id": "channel_tools", "config": {"tools": TOOLS}}), [], deps(surface="slack"))
    for tool in outcome.script.requests[0].function_tools:
        limit = " ".join(tool.parameters_json_schema["properties"]["limit"]["description"].split())
        assert "default_limit (20 unless changed)" in limit and "at most 200" in limit, tool.name
