"""channel_tools through the real runner: the bot binding grants it (run.options["channel"]["tools"]) and the
tool is bound server-side to the channel the run came from; a spec can never carry it."""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelResponse, TextPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run, ToolCall
from capabilities import registry
from capabilities.channel_tools import CAPABILITY
from channelbots.models import ChannelBot
from tests import factories
from tests.channelbots.conftest import bind, wait_until


def test_publish_refuses_channel_tools_in_a_spec(org, builder):
    from agents.models import ModelProfile
    from agents.spec import AgentSpec

    spec = AgentSpec(name="X", capabilities=[{"id": "channel_tools", "config": {"tools": ["get_channel_info"]}}])
    problems = registry.validate_bindings(spec, organization=org, can_view_secret=lambda _: True)
    assert [p["field"] for p in problems] == ["capabilities.0.id"]
    assert "per bot binding" in problems[0]["message"]
    assert ModelProfile  # imported for symmetry with the runner test below


def calls_channel_info_then_answers() -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            assert [t.name for t in info.function_tools] == ["get_channel_info"]
            yield {0: DeltaToolCall(name="get_channel_info", json_args="{}", tool_call_id="c1")}
            return
        yield f"Channel: {json.dumps(returns[-1].content)}"

    def respond(messages, info):
        return ModelResponse(parts=[TextPart("unused")])

    return FunctionModel(respond, stream_function=stream, model_name="scripted")


def test_get_channel_info_reads_the_channel_the_message_arrived_in(celery_worker, scripted_model, fake_slack, sender,
                                                                  org, builder):
    # Not in the spec (publish refuses it there): the bot binding grants it to runs it starts.
    agent = factories.published_agent(org, builder, name="Support Agent")
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org, channel_tools=["get_channel_info"])
    fake_slack.channels["C1"] = {"name": "support", "purpose": {"value": "Customer help"}, "topic": {"value": ""},
                                 "num_members": 12}
    scripted_model(calls_channel_info_then_answers())
    sender.send(sender.message("<@UBOT> where am I?", channel="C1"))
    post = wait_until(lambda: next((p for p in fake_slack.answers("C1") if p.final.startswith("Channel:")), None))
    assert '"name": "support"' in post.final and '"member_count": 12' in post.final
    call = ToolCall.objects.get()
    assert call.tool_name == "get_channel_info" and call.args == {}
    assert Run.objects.get().options["channel"]["chat_id"] == "C1"


def test_a_telegram_run_is_offered_only_info_and_members():
    from types import SimpleNamespace

    from capabilities.channel_tools.capability import ChannelToolsConfig, build

    ctx = SimpleNamespace(config=ChannelToolsConfig(tools=list(CAPABILITY.tool_ids())),
                          deps=SimpleNamespace(surface="telegram"))
    (toolset,) = build(ctx)
    assert sorted(toolset.tools) == ["get_channel_info", "list_channel_members"]
    ctx.deps.surface = "web"
    assert build(ctx) == []
