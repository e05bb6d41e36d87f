"""Tool search: pydantic-ai's `ToolSearch`. Binding it is what marks the MCP toolsets for deferred loading
(the `mcp` capability reads `tool_search_active` at run time); the registry's own tools stay visible.
No tools of its own: the search function exists only while something is deferred."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.capabilities import ToolSearch

from capabilities.base import BuildContext, Built, Capability


class ToolSearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    strategy: Literal["auto", "keywords", "bm25", "regex"] = Field(default="auto", json_schema_extra={
        "x-enum-labels": {"auto": "Automatic", "keywords": "Keywords (local)", "bm25": "BM25 (Anthropic)",
                          "regex": "Regex (Anthropic)"}})
    max_results: int = Field(default=10, ge=1, le=50, description="Ignored by native search.")


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, ToolSearchConfig)
    ctx.deps.scratch["tool_search_active"] = True
    strategy = None if ctx.config.strategy == "auto" else ctx.config.strategy
    return [ToolSearch(strategy=strategy, max_results=ctx.config.max_results)]


CAPABILITY = Capability(
    id="tool_search",
    name="Tool search",
    category="utility",
    description="Lets the agent search a large set of tools (MCP servers) instead of seeing every schema at once.",
    offers="searching large MCP tool sets instead of loading every schema",
    examples=(
        "File this expense: the right tool is somewhere in our connected servers.",
        "Look the customer up with whichever connected tool can do it.",
        "Which of our MCP tools can create a calendar event?",
    ),
    never_does=(
        "It never hides the agent's built-in tools: only tools from connected MCP servers wait to be found,"
        " and they keep their names and approval rules."
    ),
    tools=(),
    config_model=ToolSearchConfig,
    advanced=True,
    build=build,
)
