"""capabilities.failures: retry while budget remains, plain result on the last attempt, refusals never retry."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from capabilities import failures
from tests.capabilities.helpers import is_retry


def _agent_calling(tool, times: int, retries: int = 1) -> tuple[Agent, list]:
    seen: list = []

    def model(messages, info: AgentInfo) -> ModelResponse:
        seen.append(messages[-1])
        if len(seen) <= times:
            return ModelResponse(parts=[ToolCallPart("probe", {}, tool_call_id=f"c{len(seen)}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model))
    agent.tool(retries=retries)(tool)
    return agent, seen


def _parts(result, kind):
    """Retry requests are ToolReturnPart(outcome="retried") in pydantic-ai 2.62; answers are the other returns."""
    parts = [
        p for m in result.all_messages() for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    ]
    if kind is RetryPromptPart:
        return [p for p in parts if is_retry(p)]
    return [p for p in parts if not is_retry(p)]


async def test_a_retry_is_a_retry_request_while_budget_remains_and_a_plain_result_on_the_last_attempt():
    async def probe(ctx: RunContext[None]) -> str:
        return failures.retry(ctx, "series 'a' has 2 values but x_values has 3 points")

    agent, _ = _agent_calling(probe, times=2)
    result = await agent.run("go")
    retries = _parts(result, RetryPromptPart)
    returns = _parts(result, ToolReturnPart)
    assert len(retries) == 1 and "series 'a' has 2 values" in retries[0].content
    assert len(returns) == 1
    assert returns[0].content.startswith(failures.LAST_ATTEMPT_PREFIX)
    assert result.output == "done"  # the run survives a retry past its budget


async def test_a_run_survives_a_model_that_keeps_making_the_same_mistake():
    async def probe(ctx: RunContext[None]) -> str:
        return failures.retry(ctx, "still wrong")

    agent, _ = _agent_calling(probe, times=4)
    result = await agent.run("go")
    assert result.output == "done"
    assert len(_parts(result, ToolReturnPart)) >= 1


async def test_a_transient_fault_is_retried_and_then_reported_as_the_service_not_answering():
    async def probe(ctx: RunContext[None]) -> str:
        return failures.transient(ctx, "The search provider timed out.")

    agent, _ = _agent_calling(probe, times=2)
    result = await agent.run("go")
    assert "calling again may work" in _parts(result, RetryPromptPart)[0].content
    last = _parts(result, ToolReturnPart)[0].content
    assert "not answering right now" in last and "timed out" in last


async def test_a_refusal_is_text_and_never_a_retry():
    async def probe(ctx: RunContext[None]) -> str:
        return failures.refuse("This deployment does not offer web access.")

    agent, _ = _agent_calling(probe, times=1)
    result = await agent.run("go")
    assert _parts(result, RetryPromptPart) == []
    content = _parts(result, ToolReturnPart)[0].content
    assert content.startswith(failures.REFUSAL_PREFIX) and "does not offer web access" in content


async def test_bad_news_is_the_answer_itself():
    async def probe(ctx: RunContext[None]) -> str:
        return failures.bad_news("No results for 'zebra'.")

    agent, _ = _agent_calling(probe, times=1)
    result = await agent.run("go")
    assert _parts(result, RetryPromptPart) == []
    assert _parts(result, ToolReturnPart)[0].content == "No results for 'zebra'."


def test_retry_raises_model_retry_only_while_a_retry_remains():
    ctx = RunContext(deps=None, model=None, usage=None, retry=0, max_retries=1)  # type: ignore[arg-type]
    with pytest.raises(ModelRetry):
        failures.retry(ctx, "bad")
    last = RunContext(deps=None, model=None, usage=None, retry=1, max_retries=1)  # type: ignore[arg-type]
    assert failures.retry(last, "bad").endswith("bad")
    none = RunContext(deps=None, model=None, usage=None, retry=0, max_retries=0)  # type: ignore[arg-type]
    assert failures.retry(none, "bad").startswith(failures.LAST_ATTEMPT_PREFIX)
