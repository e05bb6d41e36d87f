"""The real OpenAI client (pydantic-ai OpenAIChatModel built from a profile) against the local fake server."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic_ai import Agent

from agents.providers import build_model, describe_provider_error, model_settings_for
from agents.spec import ModelSettingsSpec
from tests import factories
from tests.fakes.openai_server import FakeOpenAIServer, Reply

from .helpers import stream_run

KEY = "sk-live-abcdefghijklmnop1234"


def compatible_profile(org, server: FakeOpenAIServer, *, api_key: str | None = KEY, **settings):
    return factories.model_profile(
        org,
        provider="openai_compatible",
        model="fake-model",
        api_key=api_key,
        base_url=server.base_url,
        settings={"max_retries": 0, **settings},
    )


def clock_agent(model, calls: list[str]) -> Agent:
    agent = Agent(model, instructions="You are helpful.")

    @agent.tool_plain
    def local_time(timezone: str = "UTC") -> str:
        calls.append(timezone)
        return "12:00 in " + timezone

    return agent


def run_failing(model) -> BaseException:
    async def go():
        await Agent(model).run("hello")

    with pytest.raises(Exception) as caught:
        asyncio.run(go())
    return caught.value


def assert_safe(summary: dict, *secrets: str) -> None:
    text = json.dumps(summary)
    for secret in secrets:
        assert secret not in text
    assert "127.0.0.1" not in text
    assert "http" not in text


def test_a_streamed_turn_with_a_tool_call_goes_through_the_real_openai_client(org, fake_openai):
    fake_openai.queue(
        Reply.tool_call("local_time", {"timezone": "Europe/Madrid"}),
        Reply.text("It is noon in Madrid right now.", usage={"prompt_tokens": 40, "completion_tokens": 7}),
    )
    profile = compatible_profile(org, fake_openai)
    calls: list[str] = []

    streamed = asyncio.run(stream_run(clock_agent(build_model(profile), calls), "What time is it in Madrid?"))

    assert calls == ["Europe/Madrid"]
    assert streamed.text_pieces == ["It ", "is ", "noon ", "in ", "Madrid ", "right ", "now."]
    assert streamed.result.output == "It is noon in Madrid right now."
    usage = streamed.result.usage
    first_prompt_words = len("You are helpful. What time is it in Madrid?".split())
    assert usage.requests == 2
    assert usage.input_tokens == first_prompt_words + 40
    assert usage.output_tokens == (len(json.dumps({"timezone": "Europe/Madrid"}).split()) + 1) + 7

    first, second = fake_openai.chat_requests
    assert first.bearer == KEY and second.bearer == KEY
    assert first.json["stream"] is True
    assert first.json["stream_options"] == {"include_usage": True}
    assert [tool["function"]["name"] for tool in first.json["tools"]] == ["local_time"]
    tool_message = second.json["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"] == "12:00 in Europe/Madrid"
    assert KEY not in fake_openai.all_bodies()


def test_a_plain_request_without_streaming_also_works(org, fake_openai):
    fake_openai.queue(Reply.text("Plain answer."))
    model = build_model(compatible_profile(org, fake_openai))

    result = asyncio.run(Agent(model).run("hi"))

    assert result.output == "Plain answer."
    assert fake_openai.chat_requests[0].json.get("stream") in (None, False)


def test_profile_and_spec_settings_reach_the_provider_request(org, fake_openai):
    fake_openai.queue(Reply.text("ok"))
    profile = compatible_profile(org, fake_openai, temperature=0.2, max_tokens=999)
    model = build_model(profile)
    settings = model_settings_for(profile, ModelSettingsSpec(max_tokens=50))

    asyncio.run(Agent(model).run("hi", model_settings=settings))

    body = fake_openai.chat_requests[0].json
    assert body["temperature"] == 0.2
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 50


def test_a_server_error_becomes_an_exception_with_a_safe_summary(org, fake_openai):
    fake_openai.queue(Reply.error(500, f"boom while using {KEY} at {fake_openai.base_url}?api_key={KEY}"))
    model = build_model(compatible_profile(org, fake_openai))

    summary = describe_provider_error(run_failing(model))

    assert summary["status"] == 500
    assert summary["category"] == "server_error"
    assert summary["type"].startswith("Model")
    assert set(summary) == {"type", "status", "category", "message"}
    assert_safe(summary, KEY)


def test_a_bad_key_becomes_a_401_summary_without_the_key(org):
    with FakeOpenAIServer(api_key="sk-the-right-key-000000") as server:
        model = build_model(compatible_profile(org, server, api_key=KEY))

        summary = describe_provider_error(run_failing(model))

        assert server.chat_requests[0].bearer == KEY
    assert summary["status"] == 401
    assert summary["category"] == "authentication"
    assert_safe(summary, KEY, "sk-the-right-key-000000")


def test_a_slow_server_becomes_a_timeout_summary(org, fake_openai):
    fake_openai.queue(Reply.slow(3.0))
    model = build_model(compatible_profile(org, fake_openai, timeout=0.3))

    summary = describe_provider_error(run_failing(model))

    assert summary["category"] == "timeout"
    assert summary["status"] is None
    assert_safe(summary, KEY)


def test_a_keyless_compatible_profile_never_sends_the_operators_environment_key(org, fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-environment-key")
    fake_openai.queue(Reply.text("ok"))
    model = build_model(compatible_profile(org, fake_openai, api_key=None))

    asyncio.run(Agent(model).run("hi"))

    assert fake_openai.chat_requests[0].bearer == "no-key"


def test_the_fallback_model_moves_on_from_a_failing_profile_to_a_working_one(org):
    with FakeOpenAIServer() as broken, FakeOpenAIServer() as working:
        broken.queue(Reply.error(500))
        working.queue(Reply.text("Answer from the fallback."))
        primary = compatible_profile(org, broken)
        backup = compatible_profile(org, working)
        primary.fallbacks.add(backup)

        result = asyncio.run(Agent(build_model(primary)).run("hi"))

        assert result.output == "Answer from the fallback."
        assert len(broken.chat_requests) == 1
        assert len(working.chat_requests) == 1


def test_the_fallback_model_moves_on_after_a_rejected_key(org):
    with FakeOpenAIServer(api_key="sk-not-this-one-000000") as rejecting, FakeOpenAIServer() as working:
        working.queue(Reply.text("Fallback says hi."))
        primary = compatible_profile(org, rejecting)
        primary.fallbacks.add(compatible_profile(org, working, api_key="sk-second-key-0000000"))

        result = asyncio.run(Agent(build_model(primary)).run("hi"))

        assert result.output == "Fallback says hi."
        assert working.chat_requests[0].bearer == "sk-second-key-0000000"


def test_when_every_model_fails_the_summary_lists_each_attempt_safely(org):
    with FakeOpenAIServer() as first, FakeOpenAIServer(api_key="sk-other-000000000000") as second:
        first.queue(Reply.error(503))
        primary = compatible_profile(org, first)
        primary.fallbacks.add(compatible_profile(org, second))

        summary = describe_provider_error(run_failing(build_model(primary)))

    assert [attempt["status"] for attempt in summary["attempts"]] == [503, 401]
    assert summary["status"] == 401
    assert_safe(summary, KEY, "sk-other-000000000000")
