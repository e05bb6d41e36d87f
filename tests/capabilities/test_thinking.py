"""thinking: no tools; the effort reaches the model as the unified `thinking` setting, which each provider
maps to its nearest level (pydantic-ai's Thinking capability)."""

from __future__ import annotations

from pydantic_ai.profiles import ModelProfile

from tests.capabilities.helpers import run, spec

THINKS = ModelProfile(supports_thinking=True)


async def test_an_effort_reaches_a_thinking_model_as_its_thinking_level():
    outcome = await run(spec({"id": "thinking", "config": {"effort": "high"}}), [], profile=THINKS)
    assert outcome.script.requests[0].model_request_parameters.thinking == "high"
    assert outcome.script.offered == []


async def test_unset_effort_asks_for_the_providers_default_thinking():
    outcome = await run(spec({"id": "thinking"}), [], profile=THINKS)
    assert outcome.script.requests[0].model_request_parameters.thinking is True


async def test_without_the_capability_the_model_is_not_asked_to_think():
    outcome = await run(spec(), [], profile=THINKS)
    assert not outcome.script.requests[0].model_request_parameters.thinking


async def test_a_model_that_cannot_think_still_runs():
    outcome = await run(spec({"id": "thinking", "config": {"effort": "max"}}), [])
    assert outcome.output == "done"
    assert not outcome.script.requests[0].model_request_parameters.thinking
