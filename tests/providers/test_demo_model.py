"""The offline demo model: word-by-word streaming, the demo tools (only when offered), the time read from the
clock's instructions, usage, determinism."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai_harness.ask_user import Question

from agents.providers import build_model
from agents.providers.demo import DemoModel, demo_model, detect
from tests import factories

from .helpers import stream_run

# What the clock capability puts in the instructions (capabilities/clock): the clock has no tool.
CLOCK = "Current date and time: Wednesday 2026-12-02 12:00 (Europe/Warsaw, UTC+0100). Use it instead of guessing."


class Series(BaseModel):
    name: str
    values: list[float]


def agent_with(*tool_names: str) -> tuple[Agent, list[tuple[str, dict]]]:
    """A demo agent offering the named tools (schemas shaped like the real capabilities'); records calls."""
    calls: list[tuple[str, dict]] = []
    agent = Agent(demo_model(), instructions=CLOCK if "clock" in tool_names else None)

    if "create_chart" in tool_names:

        @agent.tool_plain
        def create_chart(
            chart_type: Literal["line", "bar", "area", "scatter", "pie"],
            title: str,
            x_values: list[str | float],
            series: list[Series],
            x_label: str = "",
        ) -> str:
            calls.append(("create_chart", {"chart_type": chart_type, "title": title, "x_values": x_values,
                                           "series": series}))
            return f"Chart '{title}' drawn with {len(x_values)} points."

    if "run_python" in tool_names:

        @agent.tool_plain
        def run_python(code: str) -> str:
            calls.append(("run_python", {"code": code}))
            return "84"

    if "ask_user_question" in tool_names:

        @agent.tool_plain
        def ask_user_question(questions: list[Question]) -> str:
            calls.append(("ask_user_question", {"questions": questions}))
            return "The person chose: coffee"

    return agent, calls


ALL_TOOLS = ("clock", "create_chart", "run_python", "ask_user_question")
DEMO_NOTE_MARKERS = ("offline demo model", "Settings → Model profiles", "platform_bootstrap --openai-api-key")


async def test_it_streams_a_plain_answer_word_by_word():
    agent, calls = agent_with()
    streamed = await stream_run(agent, "Hello there, who are you?")

    pieces = streamed.text_pieces
    assert len(pieces) > 20
    assert all(len(piece.split()) == 1 for piece in pieces), pieces
    assert "".join(pieces) == streamed.result.output
    assert calls == []


async def test_every_answer_says_it_is_the_demo_model_and_how_to_add_a_key():
    agent, _ = agent_with(*ALL_TOOLS)
    for prompt in ("hello", "what time is it?", "calculate 12 * 7"):
        streamed = await stream_run(agent, prompt)
        for marker in DEMO_NOTE_MARKERS:
            assert marker in streamed.result.output, (prompt, marker)


async def test_it_reads_the_time_from_the_clocks_instructions_without_a_tool_call():
    agent, calls = agent_with(*ALL_TOOLS)
    streamed = await stream_run(agent, "What time is it?")

    assert calls == [] and streamed.tool_calls == []
    assert "Wednesday 2026-12-02 12:00 (Europe/Warsaw, UTC+0100)" in streamed.result.output


async def test_without_the_clock_it_says_it_does_not_know_the_time():
    agent, _ = agent_with("create_chart")
    streamed = await stream_run(agent, "What time is it?")

    assert "the clock capability is not enabled" in streamed.result.output


async def test_it_draws_a_chart_with_one_series_as_long_as_the_axis():
    agent, calls = agent_with(*ALL_TOOLS)
    streamed = await stream_run(agent, "Show me a chart of my week")

    [(name, args)] = calls
    assert name == "create_chart"
    assert args["chart_type"] == "bar"
    assert len(args["x_values"]) >= 2
    [series] = args["series"]
    assert len(series.values) == len(args["x_values"])
    assert "drawn with" in streamed.result.output


async def test_it_computes_an_expression_from_the_prompt_with_run_python():
    agent, calls = agent_with(*ALL_TOOLS)
    streamed = await stream_run(agent, "Can you calculate 12 * 7 for me?")

    assert calls == [("run_python", {"code": "result = 12 * 7\nprint(result)"})]
    assert "run_python: 84" in streamed.result.output


async def test_a_bare_arithmetic_expression_counts_as_a_calculation():
    assert detect("what is 3 + 4?").intents == ("calculation",)
    assert detect("2024 was a good year").intents == ()


async def test_it_asks_the_user_to_choose_between_the_options_in_the_prompt():
    agent, calls = agent_with(*ALL_TOOLS)
    streamed = await stream_run(agent, "Help me choose: tea or coffee?")

    [(name, args)] = calls
    assert name == "ask_user_question"
    [question] = args["questions"]
    assert [option.label for option in question.options] == ["tea", "coffee"]
    assert "The person chose: coffee" in streamed.result.output


async def test_it_calls_no_tool_that_is_not_offered_and_says_so():
    agent, calls = agent_with()
    streamed = await stream_run(agent, "What time is it? And draw a chart.")

    assert calls == []
    assert streamed.tool_calls == []
    assert "create_chart" in streamed.result.output
    assert "not enabled" in streamed.result.output


async def test_it_calls_only_the_offered_tool_when_the_prompt_asks_for_several():
    agent, calls = agent_with("run_python")
    await stream_run(agent, "What time is it, and calculate 2 + 2")

    assert [name for name, _ in calls] == ["run_python"]


async def test_it_calls_every_offered_tool_the_prompt_asks_for_in_one_turn():
    agent, calls = agent_with(*ALL_TOOLS)
    streamed = await stream_run(agent, "What time is it? Then calculate 2 + 2 and plot a chart.")

    # The model asks in a fixed order; pydantic-ai runs the calls concurrently, so they finish in any.
    requested = [p.tool_name for m in streamed.result.all_messages() if isinstance(m, ModelResponse)
                 for p in m.parts if isinstance(p, ToolCallPart)]
    assert requested == ["create_chart", "run_python"]
    assert sorted(name for name, _ in calls) == sorted(requested)
    assert streamed.result.usage.requests == 2
    assert "2026-12-02 12:00" in streamed.result.output  # the time, from the instructions, in the summary


async def test_it_answers_in_spanish_to_a_spanish_prompt():
    agent, calls = agent_with(*ALL_TOOLS)
    streamed = await stream_run(agent, "¿Qué hora es? Y calcula 2 + 2")

    assert [name for name, _ in calls] == ["run_python"]
    assert "Mis instrucciones dicen: Current date and time" in streamed.result.output
    assert "Soy el modelo de demostración sin conexión" in streamed.result.output
    assert "Settings → Model profiles" in streamed.result.output


@pytest.mark.parametrize(
    ("prompt", "intent"),
    [
        ("dame la fecha de hoy", "time"),
        ("haz un gráfico de ventas", "chart"),
        ("calcula el total", "calculation"),
        ("elige una opción por mí", "choice"),
    ],
)
async def test_spanish_keywords_are_recognised(prompt, intent):
    detected = detect(prompt)
    assert detected.intents == (intent,)
    assert detected.spanish


async def test_the_same_prompt_gives_the_same_output_and_tool_calls():
    runs = []
    for _ in range(2):
        agent, calls = agent_with(*ALL_TOOLS)
        streamed = await stream_run(agent, "What time is it? Also calculate 6 * 7.")
        # pydantic-ai executes one response's tool calls concurrently, so the order they *ran* in is not the
        # model's to decide: compare what ran, not when.
        runs.append((streamed.result.output, [(c.tool_name, c.args_as_dict(), c.tool_call_id)
                                              for c in streamed.tool_calls], sorted(map(repr, calls))))
    assert runs[0] == runs[1]


async def test_it_reports_token_usage_estimated_from_words_when_streaming_and_not():
    agent, _ = agent_with()
    prompt = "Please tell me something nice about the weather today"
    streamed = await stream_run(agent, prompt)
    plain = await agent.run(prompt)

    for usage in (streamed.result.usage, plain.usage):
        assert usage.requests == 1
        assert usage.input_tokens == len(prompt.split())
        assert usage.output_tokens >= len(plain.output.split())
    assert plain.usage.output_tokens == len(plain.output.split())


async def test_a_tool_asking_for_a_retry_is_reported_instead_of_retried_forever():
    agent = Agent(demo_model())
    attempts = []

    @agent.tool_plain
    def run_python(code: str) -> str:
        attempts.append(code)
        raise ModelRetry("the sandbox is busy")

    result = await agent.run("calculate 1 + 1")

    assert len(attempts) == 1
    assert "run_python did not work" in result.output
    assert "the sandbox is busy" in result.output


def test_a_demo_profile_builds_the_offline_demo_model(org):
    profile = factories.model_profile(org, provider="demo", model="demo")

    model = build_model(profile)

    assert isinstance(model, DemoModel)
    assert model.system == "demo"
