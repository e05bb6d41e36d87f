"""agents.providers.ValidatedChunksOpenAI: every OpenAI SDK client a profile builds reads streamed chunks with
pydantic's validator first — the same model object as the SDK's own builder — and a chunk the validator refuses
still parses as the SDK always parsed it."""

from __future__ import annotations

import httpx2
from openai._models import construct_type
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agents.providers import ValidatedChunksOpenAI, build_model
from tests import factories

CHUNK = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1764000000, "model": "gpt-4o-mini",
         "choices": [{"index": 0, "delta": {"content": " word", "tool_calls": [
             {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{"}}]},
             "finish_reason": None}],
         "usage": None, "x_vendor": {"kept": True}}


def _client(org, provider: str = "openai_compatible") -> ValidatedChunksOpenAI:
    model = "openai/gpt-4o-mini" if provider == "openrouter" else "gpt-4o-mini"
    profile = factories.model_profile(org, provider=provider, model=model, api_key="sk-test-key-123456",
                                      base_url="http://models.example/v1")
    client = build_model(profile).client
    assert type(client) is ValidatedChunksOpenAI
    return client


def _read(client, data, cast_to=ChatCompletionChunk):
    response = httpx2.Response(200, request=httpx2.Request("POST", "http://models.example/v1/chat/completions"))
    return client._process_response_data(data=data, cast_to=cast_to, response=response)


def test_every_openai_sdk_provider_reads_chunks_this_way(org):
    for provider in ("openai", "openai_compatible", "openrouter", "ollama"):
        _client(org, provider)


def test_a_chunk_reads_as_the_sdk_builds_it_extra_fields_included(org):
    read = _read(_client(org), CHUNK)
    built = construct_type(type_=ChatCompletionChunk, value=CHUNK)
    assert type(read) is ChatCompletionChunk
    assert read == built and read.model_dump() == built.model_dump()
    assert read.x_vendor == {"kept": True}  # type: ignore[attr-defined]


def test_a_chunk_the_validator_refuses_is_built_as_before(org):
    bent = {**CHUNK, "created": "yesterday", "choices": [{"delta": {"content": "hi"}}]}  # no index, a text date
    read = _read(_client(org), bent)
    assert read.created == "yesterday" and read.choices[0].delta.content == "hi"
    assert read.model_dump() == construct_type(type_=ChatCompletionChunk, value=bent).model_dump()


def test_other_responses_take_the_sdk_path(org):
    completion = {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": []}
    assert _read(_client(org), completion, ChatCompletion) == construct_type(type_=ChatCompletion, value=completion)
