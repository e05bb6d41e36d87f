"""agents.providers.sdk_params: the chat parameters are sent as the SDK's own transform would send them — held to
the SDK on the requests pydantic-ai really builds, on every shape a message can take, and on the SDK's types (an
upgrade that adds an alias or a format to them fails here, where the plain walk would start sending it wrong)."""

from __future__ import annotations

import asyncio
import copy
import typing
from typing import Annotated, get_args, get_origin, get_type_hints

import pydantic
import pytest
import typing_extensions
from openai import AsyncOpenAI, omit
from openai._types import NOT_GIVEN
from openai._utils._transform import PropertyInfo, async_maybe_transform
from openai.resources.chat.completions import completions
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agents.providers import sdk_params
from tests.fakes.openai_server import Reply


def _property_infos(annotation, seen: set) -> list:
    """Every PropertyInfo with an alias or a format reachable from a type (TypedDicts, unions, containers)."""
    if id(annotation) in seen:
        return []
    seen.add(id(annotation))
    found = []
    if get_origin(annotation) is Annotated:
        found += [meta for meta in annotation.__metadata__
                  if isinstance(meta, PropertyInfo) and (meta.alias or meta.format)]
    if typing_extensions.is_typeddict(annotation):
        for hint in get_type_hints(annotation, include_extras=True).values():
            found += _property_infos(hint, seen)
    for argument in get_args(annotation):
        found += _property_infos(argument, seen)
    return found


@pytest.mark.parametrize("params", sdk_params.CHAT_PARAMS)
def test_the_chat_parameters_have_no_alias_or_format_anywhere_in_their_types(params):
    checked: set = set()
    assert _property_infos(params, checked) == []
    assert len(checked) > 100  # the walk reached the messages, their parts and the tools, not only the top


def test_the_sdk_calls_the_plain_walk_for_chat_parameters_and_its_own_transform_for_the_rest():
    assert completions.async_maybe_transform is sdk_params.chat_params_or_sdk  # installed as the app is ready

    class Patch(typing.TypedDict, total=False):
        metadata: dict

    assert asyncio.run(sdk_params.chat_params_or_sdk({"metadata": {"a": "b"}, "x": NOT_GIVEN}, Patch)) == {
        "metadata": {"a": "b"}}


class Shape(pydantic.BaseModel):
    kind: str
    size: int = 1


EVERY_SHAPE = {
    "model": "gpt-4o-mini", "stream": True,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "House rules."}]},
        {"role": "user", "content": [
            {"type": "text", "text": "What is in it?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}},
        ], "name": "ana"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}],
         "refusal": NOT_GIVEN},
        {"role": "tool", "tool_call_id": "call_1", "content": "12:00"},
        {"role": "assistant", "content": [{"type": "text", "text": "Noon."}], "audio": omit},
    ],
    "tools": ({"type": "function", "function": {"name": "clock", "description": "Time.", "strict": True,
                                               "parameters": {"type": "object", "properties": {}}}},),
    "tool_choice": "auto", "parallel_tool_calls": NOT_GIVEN, "stop": ["END"], "temperature": 0.2, "seed": None,
    "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"},
                                                                "strict": True}},
    "stream_options": {"include_usage": True}, "metadata": {"run": "r1"}, "logit_bias": {"50256": -100},
    "prediction": Shape(kind="content"), "user": omit,
    "modalities": (m for m in ["text"]),
}


def test_every_shape_of_message_and_parameter_is_sent_as_the_sdk_sends_it():
    for params in sdk_params.CHAT_PARAMS:
        ours = sdk_params.ready_to_send(copy.deepcopy({**EVERY_SHAPE, "modalities": ["text"]}))
        sdks = asyncio.run(async_maybe_transform(copy.deepcopy({**EVERY_SHAPE, "modalities": ["text"]}), params))
        assert ours == sdks
    generator = sdk_params.ready_to_send({"modalities": (m for m in ["text", "audio"]), "n": NOT_GIVEN})
    assert generator == {"modalities": ["text", "audio"]}
    assert sdk_params.ready_to_send({"prediction": Shape(kind="x")}) == {"prediction": {"kind": "x"}}  # set fields


@pytest.mark.django_db
def test_the_requests_pydantic_ai_builds_are_sent_as_the_sdk_would_send_them(fake_openai, monkeypatch):
    """A run with a tool call and a structured answer through the real client against the fake server: every
    parameter set the plain walk prepared equals the SDK's own transform of the same input, and the server got it."""
    sent: list[tuple[object, object]] = []

    async def recording(data, expected_type):
        sent.append((copy.deepcopy(data), expected_type))
        return await sdk_params.chat_params_or_sdk(data, expected_type)

    monkeypatch.setattr(completions, "async_maybe_transform", recording)
    fake_openai.queue(Reply.tool_call("clock", {}), Reply.text("It is noon."))

    async def run() -> str:
        client = AsyncOpenAI(base_url=fake_openai.base_url, api_key="sk-test")
        agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)),
                      instructions="Tell the time.", model_settings={"temperature": 0.1, "max_tokens": 50})

        @agent.tool_plain
        def clock() -> str:
            return "12:00"

        async with agent.run_stream("What time is it?") as result:
            return await result.get_output()

    assert asyncio.run(run()) == "It is noon."
    assert len(sent) == 2 and all(expected in sdk_params.CHAT_PARAMS for _, expected in sent)
    for data, expected in sent:
        assert sdk_params.ready_to_send(copy.deepcopy(data)) == asyncio.run(async_maybe_transform(data, expected))
    last = fake_openai.requests[-1].json
    assert last["temperature"] == 0.1 and [m["role"] for m in last["messages"]] == ["system", "user", "assistant",
                                                                                      "tool"]


def test_a_tool_schema_nested_past_the_plain_walks_depth_is_sent_as_the_sdk_sends_it():
    """A hostile or generated schema (an MCP server's tool) nested 700 deep: the plain walk runs out of recursion,
    the SDK's own walk (which never descends into a schema's values) sends it — the request is not lost."""
    schema = level = {"type": "object"}
    for _ in range(700):
        level["properties"] = {"a": {"type": "object"}}
        level = level["properties"]["a"]
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}], "n": NOT_GIVEN,
            "tools": [{"type": "function", "function": {"name": "deep", "parameters": schema}}]}
    with pytest.raises(RecursionError):
        sdk_params.ready_to_send(body)
    sent = asyncio.run(sdk_params.chat_params_or_sdk(body, sdk_params.CHAT_PARAMS[0]))
    assert sent == asyncio.run(async_maybe_transform(body, sdk_params.CHAT_PARAMS[0]))
    assert "n" not in sent and sent["tools"][0]["function"]["parameters"] == schema
