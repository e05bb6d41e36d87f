"""The fake OpenAI-compatible server speaks what the real OpenAI SDK expects (embeddings, transcription, errors)."""

from __future__ import annotations

import asyncio

import openai
import pytest

from agents.providers import describe_provider_error
from tests.fakes.openai_server import FakeOpenAIServer, Reply, embedding_for


def client_for(server: FakeOpenAIServer, key: str = "sk-fake-client-key") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key=key, max_retries=0)


def test_embeddings_are_deterministic_vectors_through_the_sdk(fake_openai):
    async def go():
        async with client_for(fake_openai) as client:
            first = await client.embeddings.create(model="emb", input=["alpha", "beta"])
            again = await client.embeddings.create(model="emb", input="alpha", dimensions=8)
            return first, again

    first, again = asyncio.run(go())

    assert [len(item.embedding) for item in first.data] == [8, 8]
    assert first.data[0].embedding != first.data[1].embedding
    assert again.data[0].embedding == pytest.approx(first.data[0].embedding, abs=1e-6)
    assert again.data[0].embedding == pytest.approx(embedding_for("alpha"), abs=1e-6)
    assert fake_openai.requests_to("embeddings")[0].json["input"] == ["alpha", "beta"]


def test_transcriptions_return_the_scripted_text_and_record_the_upload(fake_openai):
    fake_openai.queue(Reply.text("hola, ¿qué tal?"), route="transcriptions")

    async def go():
        async with client_for(fake_openai) as client:
            return await client.audio.transcriptions.create(
                model="whisper-1", file=("voice.ogg", b"OggS fake audio", "audio/ogg")
            )

    transcription = asyncio.run(go())

    assert transcription.text == "hola, ¿qué tal?"
    [recorded] = fake_openai.requests_to("transcriptions")
    assert recorded.form["model"] == "whisper-1"
    assert recorded.form["file"] == {"filename": "voice.ogg", "content_type": "audio/ogg", "size": 15}
    assert recorded.bearer == "sk-fake-client-key"


def test_without_a_script_transcription_and_chat_use_the_defaults(fake_openai):
    async def go():
        async with client_for(fake_openai) as client:
            text = await client.audio.transcriptions.create(model="w", file=("a.wav", b"RIFF", "audio/wav"))
            chat = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            return text, chat

    text, chat = asyncio.run(go())

    assert text.text == "fake transcription"
    assert chat.choices[0].message.content == "Hello from the fake server."
    assert chat.usage.prompt_tokens == 1


def test_scripted_errors_reach_the_sdk_as_its_own_exceptions(fake_openai):
    fake_openai.queue(Reply.error(429), route="embeddings")

    async def go():
        async with client_for(fake_openai) as client:
            await client.embeddings.create(model="emb", input="x")

    with pytest.raises(openai.RateLimitError) as caught:
        asyncio.run(go())
    assert caught.value.status_code == 429
    assert fake_openai.pending("embeddings") == 0


def test_a_server_with_a_required_key_refuses_any_other_bearer():
    with FakeOpenAIServer(api_key="sk-required-key-0000") as server:
        server.queue(Reply.text("only for the right key"))

        async def go(key):
            async with client_for(server, key) as client:
                return await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

        with pytest.raises(openai.AuthenticationError):
            asyncio.run(go("sk-wrong"))
        assert server.pending() == 1
        answer = asyncio.run(go("sk-required-key-0000"))

    assert answer.choices[0].message.content == "only for the right key"


def test_streamed_tool_calls_arrive_as_deltas_with_a_final_usage_chunk(fake_openai):
    fake_openai.queue(Reply.tool_calls([{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": "{}"}]))

    async def go():
        async with client_for(fake_openai) as client:
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "go"}], stream=True,
                stream_options={"include_usage": True},
            )
            return [chunk async for chunk in stream]

    chunks = asyncio.run(go())

    names = [call.function.name for c in chunks if c.choices for call in (c.choices[0].delta.tool_calls or [])
             if call.function and call.function.name]
    assert names == ["a", "b"]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0


def test_sdk_errors_used_directly_are_summarized_safely(fake_openai):
    fake_openai.queue(Reply.error(401), Reply.slow(2.0), route="embeddings")

    async def go(timeout=None):
        async with openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="sk-direct-key-000000",
                                      max_retries=0, timeout=timeout) as client:
            await client.embeddings.create(model="emb", input="x")

    with pytest.raises(openai.AuthenticationError) as rejected:
        asyncio.run(go())
    with pytest.raises(openai.APITimeoutError) as slow:
        asyncio.run(go(timeout=0.2))

    assert describe_provider_error(rejected.value) == {
        "type": "AuthenticationError", "status": 401, "category": "authentication",
        "message": "The model provider rejected the API key.",
    }
    assert describe_provider_error(slow.value)["category"] == "timeout"
