"""A bot binding sets channel_tools' default_limit (channel_tools_limit, 20, 1–200): the API accepts and returns
it, refuses anything else with the binding unchanged, the router carries it in the run's channel options and
the runner grants channel_tools with it; an outsider organization never sees the binding."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.models import Run
from agents.runner.assembly import with_channel_grants
from agents.spec import AgentSpec
from channelbots.models import Binding, ChannelBot
from tests.channelbots.conftest import bind, slack_bot, wait_until


def url(binding) -> str:
    return f"/api/v1/agents/{binding.agent_id}/bindings/{binding.pk}"


def test_a_binding_starts_at_20_and_patch_sets_its_limit(api_as, org, builder, agent):
    binding = bind(agent, slack_bot(org, builder), builder, org, channel_tools=["search_channels"])
    client = api_as(builder, org)
    assert client.get(url(binding)).json()["channel_tools_limit"] == 20
    response = client.patch(url(binding), {"channel_tools_limit": 5}, format="json")
    assert response.status_code == 200 and response.json()["channel_tools_limit"] == 5
    assert client.get(url(binding)).json()["channel_tools_limit"] == 5
    binding.refresh_from_db()
    assert binding.channel_tools_limit == 5 and binding.channel_tools == ["search_channels"]
    assert client.patch(url(binding), {"channel_tools_limit": 200}, format="json").json()["channel_tools_limit"] == 200


@pytest.mark.parametrize("value", [0, 201, "x", True, None, 5.5])
def test_a_limit_out_of_range_is_refused_naming_the_field_and_changes_nothing(api_as, org, builder, agent, value):
    binding = bind(agent, slack_bot(org, builder), builder, org, channel_tools_limit=7)
    response = api_as(builder, org).patch(url(binding), {"channel_tools_limit": value, "extra_prompt": "changed"},
                                          format="json")
    assert response.status_code == 422
    assert response.json()["error"]["details"]["field"] == "channel_tools_limit"
    binding.refresh_from_db()
    assert binding.channel_tools_limit == 7 and binding.extra_prompt == ""


def test_create_refuses_a_limit_out_of_range(api_as, org, builder, agent):
    bot = slack_bot(org, builder)
    response = api_as(builder, org).post(f"/api/v1/agents/{agent.pk}/bindings",
                                         {"bot_id": str(bot.pk), "channel_tools_limit": 0}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["details"]["field"] == "channel_tools_limit"
    assert not Binding.objects.exists()


def test_an_outsider_can_neither_read_nor_change_the_limit(api_as, org, builder, agent, outsider, outsider_org):
    binding = bind(agent, slack_bot(org, builder), builder, org)
    out = api_as(outsider, outsider_org)
    assert out.get(url(binding)).status_code == 404
    assert out.patch(url(binding), {"channel_tools_limit": 5}, format="json").status_code == 404
    binding.refresh_from_db()
    assert binding.channel_tools_limit == 20


def test_with_channel_grants_passes_the_bindings_limit():
    spec = AgentSpec(name="X")
    limited = Run(options={"channel": {"tools": ["search_channels"], "tools_limit": 5}})
    (grant,) = with_channel_grants(spec, limited).capabilities
    assert grant.id == "channel_tools" and grant.config == {"tools": ["search_channels"], "default_limit": 5}
    # Runs started before the field existed carry no limit: the capability's own default applies.
    (older,) = with_channel_grants(spec, Run(options={"channel": {"tools": ["search_channels"]}})).capabilities
    assert older.config == {"tools": ["search_channels"]}
    assert with_channel_grants(spec, Run(options={"channel": {"tools": [], "tools_limit": 5}})).capabilities == []


def searches_channels_then_answers() -> FunctionModel:
    async def stream(messages, info: AgentInfo):
        returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if not returns:
            yield {0: DeltaToolCall(name="search_channels", json_args='{"query": "team"}', tool_call_id="c1")}
            return
        yield f"Found: {json.dumps(returns[-1].content)}"

    def respond(messages, info):
        return ModelResponse(parts=[TextPart("unused")])

    return FunctionModel(respond, stream_function=stream, model_name="scripted")


def test_a_run_through_a_binding_with_limit_5_gets_5_channels(celery_worker, scripted_model, fake_slack, sender,
                                                             org, builder, agent):
    bind(agent, ChannelBot.objects.get(pk=sender.bot_id), builder, org, channel_tools=["search_channels"],
         channel_tools_limit=5)
    for i in range(8):
        fake_slack.channels[f"C{i + 10}"] = {"name": f"team-{i}"}
    scripted_model(searches_channels_then_answers())
    sender.send(sender.message("<@UBOT> which team channels are there?", channel="C1"))
    post = wait_until(lambda: next((p for p in fake_slack.answers("C1") if p.final.startswith("Found:")), None))
    found = json.loads(post.final.removeprefix("Found: "))
    assert [c["name"] for c in found] == [f"team-{i}" for i in range(5)]
    run = Run.objects.get()
    assert run.options["channel"]["tools_limit"] == 5
    (grant,) = [b for b in with_channel_grants(AgentSpec(name="X"), run).capabilities if b.id == "channel_tools"]
    assert grant.config["default_limit"] == 5
