"""pydantic-ai's stream locks are taken the fast way (agents/runner/stream_locks.py) in every stream it builds —
and every anyio lock those streams hold is one of them, so a pydantic-ai upgrade that renames a lock or adds
another fails here instead of quietly bringing back a loop turn per streamed event."""

from __future__ import annotations

import anyio
import pytest
from pydantic_ai import Agent, _utils, result
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agents.runner import stream_locks

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def lock_attributes(instance: object) -> dict[str, object]:
    """Every anyio lock the instance holds, by attribute name (anyio's asyncio lock, or its adapter when made
    outside a loop)."""
    names = [*getattr(instance, "__dict__", {}), *(getattr(type(instance), "__slots__", ()) or ())]
    return {name: getattr(instance, name) for name in names
            if hasattr(getattr(instance, name, None), "_fast_acquire") and "Lock" in type(getattr(instance, name)).__name__}


async def test_every_lock_of_an_agent_stream_and_its_peekable_source_is_fast():
    async def stream(messages, info: AgentInfo):
        if not any(part.part_kind == "tool-return" for message in messages for part in message.parts):
            yield {0: DeltaToolCall(name="clock", json_args="{}")}
        else:
            for word in ("it", " is", " noon"):
                yield word

    agent = Agent(FunctionModel(stream_function=stream))

    @agent.tool_plain
    def clock() -> str:
        return "12:00"

    seen: list[object] = []
    async with agent.iter("time?") as run:
        async for node in run:
            if Agent.is_model_request_node(node):
                async with node.stream(run.ctx) as agent_stream:
                    seen.append(agent_stream)
                    async for _event in agent_stream:
                        pass
    assert run.result is not None and run.result.output == "it is noon"
    assert len(seen) == 2 and all(isinstance(item, result.AgentStream) for item in seen)
    for agent_stream in seen:
        locks = lock_attributes(agent_stream)
        assert set(locks) == set(stream_locks.LOCKS[result.AgentStream])
        assert all(lock._fast_acquire for lock in locks.values()), locks

    async def numbers():
        for n in range(3):
            yield n

    peekable = _utils.PeekableAsyncStream(numbers())
    locks = lock_attributes(peekable)
    assert set(locks) == set(stream_locks.LOCKS[_utils.PeekableAsyncStream])
    assert all(lock._fast_acquire for lock in locks.values())
    assert await peekable.peek() == 0
    assert [n async for n in peekable] == [0, 1, 2]


async def test_a_pull_cancelled_while_another_waits_on_the_fast_lock_still_closes_the_stream():
    """What the locks are for (pydantic-ai's own comment): a pull cancelled mid-`anext` releases the lock before
    `aclose()` closes the source, so closing never meets a generator that is still running."""
    release = anyio.Event()
    closed = []

    async def slow():
        try:
            yield 1
            await release.wait()
            yield 2
        finally:
            closed.append(True)

    peekable = _utils.PeekableAsyncStream(slow())
    assert await peekable.__anext__() == 1
    outcome = []

    async def pull():
        try:
            outcome.append(await peekable.__anext__())
        except StopAsyncIteration:
            outcome.append("ended")

    async with anyio.create_task_group() as group:
        group.start_soon(pull)
        await anyio.sleep(0.05)  # the pull is inside the lock, waiting on the source
        await peekable.aclose()  # cancels the pull, waits for the lock, then closes the source
    assert outcome == ["ended"] and closed == [True]
    assert await peekable.is_exhausted()
