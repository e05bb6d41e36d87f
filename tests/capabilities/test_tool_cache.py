"""capabilities.base.function_toolset keeps the Tools of module-level functions: their schema is built once per
process, not on every run's assembly, and the model is offered exactly what a fresh toolset offers."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RunUsage

from capabilities.base import function_toolset
from capabilities.charts.capability import create_chart


def _definitions(toolset: FunctionToolset[Any]) -> list[Any]:
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    return [tool.tool_def for tool in asyncio.run(toolset.get_tools(ctx)).values()]


def test_a_module_level_tool_is_built_once_and_offered_as_a_fresh_toolset_offers_it():
    first, second = function_toolset([create_chart]), function_toolset([create_chart])
    assert first is not second  # a toolset per run
    assert first.tools["create_chart"] is second.tools["create_chart"]
    assert _definitions(first) == _definitions(FunctionToolset([create_chart], max_retries=1))


def test_retries_are_part_of_the_key():
    once, twice = function_toolset([create_chart]), function_toolset([create_chart], max_retries=2)
    assert once.tools["create_chart"] is not twice.tools["create_chart"]
    assert (once.tools["create_chart"].max_retries, twice.tools["create_chart"].max_retries) == (1, 2)


def test_a_closure_is_built_on_every_call():
    def make(answer: str):
        def answer_tool() -> str:
            """Answer."""
            return answer

        return answer_tool

    one, other = function_toolset([make("a")]), function_toolset([make("b")])
    assert one.tools["answer_tool"] is not other.tools["answer_tool"]
    assert one.tools["answer_tool"].function() == "a" and other.tools["answer_tool"].function() == "b"
