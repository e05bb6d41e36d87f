"""Tool search: pydantic-ai's `ToolSearch`. Binding it is what marks the MCP toolsets for deferred loading
(the `mcp` capability reads `tool_search_active` at run time); the registry's own tools stay visible.
No tools of its own: the search function exists only while something is deferred."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.capabilities import ToolSearch

from capabilities.base import BuildContext, Built, Capability, tool_text
from capabilities.lifecycle import RunHooks

# The library's search tool is registered with an explicit description, so it gets ours, in the four parts
# every tool here has (spec: "Qué le dice una herramienta al modelo"); the library's sentence said nothing
# about what comes back or how many.
SEARCH_TOOLS_TEXT = tool_text(
    what="Find tools among this agent's connected (MCP) tools that are not loaded yet, by words in their names "
         "and descriptions.",
    when="Use it when none of the tools you can see does what the request needs; the tools you already see "
         "are not in it, so do not search for them. If nothing is found, do not search again with the same "
         "words: say what is missing.",
    args="queries: one or more short searches, each a few specific words likely to be in a tool's name or "
         "description (e.g. [\"create invoice\"]); matches of all of them are returned together.",
    returns="The names of the matching tools, best first, at most the agent's max_results (10 unless changed); "
            "each found tool can be called from the next step on. No match returns an empty list with a "
            "message saying so; an empty query comes back as a request to call again with words.",
)
SEARCH_QUERIES_TEXT = (
    "Short searches, each a few specific words likely to appear in a tool's name or description; "
    "the matches of every query are returned together."
)


class ToolSearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    strategy: Literal["auto", "keywords", "bm25", "regex"] = Field(default="auto", json_schema_extra={
        "x-enum-labels": {"auto": "Automatic", "keywords": "Keywords (local)", "bm25": "BM25 (Anthropic)",
                          "regex": "Regex (Anthropic)"}})
    max_results: int = Field(default=10, ge=1, le=50, description="Ignored by native search.")


def model_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    """bm25 / regex force the provider's own search (spec: the run errors instead of switching quietly); on a
    model without native tool search that is every run, so publish refuses it. `auto` never fails this way."""
    from capabilities.model_support import binding_on_model

    bound = binding_on_model(actor, data, "tool_search", ToolSearchConfig)
    if bound is None or bound.config.strategy not in ("bm25", "regex") or "tool_search" in bound.native_tool_kinds():
        return []
    return [{"field": f"{format_path(('capabilities', bound.index), data)}.config.strategy",
             "message": f"The model of “{bound.label}” ({bound.model.model_name}) has no native tool search, so "
                        f"strategy '{bound.config.strategy}' would fail every run: choose 'auto' or 'keywords', or "
                        "a model that offers it."}]


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, ToolSearchConfig)
    ctx.deps.scratch["tool_search_active"] = True
    strategy = None if ctx.config.strategy == "auto" else ctx.config.strategy
    return [ToolSearch(strategy=strategy, max_results=ctx.config.max_results, tool_description=SEARCH_TOOLS_TEXT,
                       parameter_description=SEARCH_QUERIES_TEXT)]


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
    tools_note=("No tools, on purpose: its search tool appears only while it wraps MCP tools that wait to "
                "be found; on its own it declares nothing."),
    config_model=ToolSearchConfig,
    # A call's tools are fixed when it connects, so a call gets its MCP tools directly (spec: "descartada").
    voice="never",
    advanced=True,
    build=build,
    hooks=RunHooks(publish_problems=model_problems),
)
