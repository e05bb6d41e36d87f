"""Web search. duckduckgo (default, free, via `ddgs`), native (the model provider searches), and the paid
tavily / brave / exa, which need an API key from the organization's secrets (a conditional requirement).

The paid providers are called over their public HTTP APIs directly rather than through their SDKs (none is
installed, and each is one request); `WEB_SEARCH_ENDPOINTS` in settings can point them elsewhere (tests
point them at a local fake). The key goes only into the provider's auth header and is never in a result.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio.to_thread
import httpx2
from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import WebSearch

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, KeyRequirement, ToolDecl, function_toolset
from capabilities.lifecycle import RunHooks

PAID = ("tavily", "brave", "exa")
ENDPOINTS = {
    "tavily": "https://api.tavily.com/search",
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "exa": "https://api.exa.ai/search",
}
TIMEOUT = 20
LABELS: dict[str, Any] = {"duckduckgo": "DuckDuckGo", "native": "Model provider", "tavily": "Tavily", "brave": "Brave Search",
          "exa": "Exa"}


class WebResearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: Literal["duckduckgo", "native", "tavily", "brave", "exa"] = Field(
        default="duckduckgo", json_schema_extra={"x-enum-labels": LABELS})
    max_results: int = Field(default=5, ge=1, le=10, description="Results per search (ignored by native).")


def binding_problems(binding: Any, config: WebResearchConfig) -> list[str]:
    required = binding.tool_approval.get("web_search", binding.approval) == "required"
    if required and config.method == "native":
        return ["web_search requires approval but method is 'native': the provider would search without asking. "
                "Choose a method this deployment runs, or remove the approval requirement."]
    return []


def model_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    """`native` on a model whose provider does not search would fail every run: refused at publish."""
    from capabilities.model_support import binding_on_model

    bound = binding_on_model(actor, data, "web_research", WebResearchConfig)
    if bound is None or bound.config.method != "native" or "web_search" in bound.native_tool_kinds():
        return []
    return [{"field": f"{format_path(('capabilities', bound.index), data)}.config.method",
             "message": f"The model of “{bound.label}” ({bound.model.model_name}) cannot search the web itself, so "
                        "method 'native' would fail every run: choose another method or a model that searches."}]


def endpoint(method: str) -> str:
    return (getattr(settings, "WEB_SEARCH_ENDPOINTS", None) or {}).get(method, ENDPOINTS[method])


async def _paid(method: str, key: str, query: str, n: int) -> list[dict[str, str]]:
    async with httpx2.AsyncClient(timeout=TIMEOUT, trust_env=False) as client:
        if method == "tavily":
            response = await client.post(endpoint(method), headers={"Authorization": f"Bearer {key}"},
                                         json={"query": query, "max_results": n, "search_depth": "basic"})
            rows = response.json().get("results", []) if response.is_success else None
            results = [{"title": r.get("title", ""), "url": r.get("url", ""), "snippet": r.get("content", "")}
                       for r in rows or []]
        elif method == "brave":
            response = await client.get(endpoint(method), params={"q": query, "count": n},
                                        headers={"X-Subscription-Token": key, "Accept": "application/json"})
            rows = ((response.json().get("web") or {}).get("results", [])) if response.is_success else None
            results = [{"title": r.get("title", ""), "url": r.get("url", ""), "snippet": r.get("description", "")}
                       for r in rows or []]
        else:
            response = await client.post(endpoint(method), headers={"x-api-key": key},
                                         json={"query": query, "numResults": n, "contents": {"text": {"maxCharacters": 500}}})
            rows = response.json().get("results", []) if response.is_success else None
            results = [{"title": r.get("title", ""), "url": r.get("url", ""), "snippet": (r.get("text") or "")[:500]}
                       for r in rows or []]
    if rows is None:
        raise ProviderError(response.status_code)
    return results[:n]


class ProviderError(Exception):
    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


def _duckduckgo(query: str, n: int) -> list[dict[str, str]]:
    from ddgs import DDGS

    # backend="duckduckgo": the method the agent's owner chose is the engine asked. ddgs's default ("auto")
    # would also send the query to Google, Bing, Yandex and others.
    return [{"title": r.get("title", ""), "url": r.get("href", ""), "snippet": r.get("body", "")}
            for r in DDGS().text(query, max_results=n, backend="duckduckgo")]


async def web_search(ctx: RunContext[Any], query: str) -> Any:
    """Search the public web for current information.

    Use it for anything recent or outside what you know. A search finds pages; it does not read them:
    read a result with web_fetch when it is available.

    Args:
        query: What to search for, as you would type it into a search engine.

    Returns:
        A list of {title, url, snippet}, best first (up to the agent's max_results). No results is an
        empty list; a search service that does not answer comes back as a request to try again.
    """
    setup = ctx.deps.scratch["web_research"]
    method, n = setup["method"], setup["max_results"]
    try:
        if method == "duckduckgo":
            return await anyio.to_thread.run_sync(_duckduckgo, query, n)
        return await _paid(method, setup["key"], query, n)
    except ProviderError as exc:
        if exc.status in (401, 403):
            return failures.refuse(f"The {LABELS[method]} key was rejected (HTTP {exc.status}); someone who "
                                   "manages this agent must replace it.")
        return failures.transient(ctx, f"{LABELS[method]} answered HTTP {exc.status}.")
    except httpx2.TimeoutException:
        return failures.transient(ctx, f"{LABELS[method]} did not answer within {TIMEOUT} seconds.")
    except Exception as exc:  # ddgs and httpx raise their own families; only the class name is safe to show
        return failures.transient(ctx, f"The search failed ({type(exc).__name__}).")


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, WebResearchConfig)
    config = ctx.config  # approval + a provider-executed method never gets here: build_for_run refuses the run
    if config.method == "native":
        return [WebSearch(native=True, local=False)]
    key = ctx.secret_value() if (config.method in PAID and ctx.secret_value) else None
    ctx.deps.scratch["web_research"] = {"method": config.method, "max_results": config.max_results, "key": key}
    return [function_toolset([web_search], max_retries=2)]


CAPABILITY = Capability(
    binding_check=binding_problems,
    hooks=RunHooks(publish_problems=model_problems),
    id="web_research",
    name="Web search",
    category="research",
    description="Searches the public web for current information and returns sources to cite.",
    offers="searching the web for current information",
    examples=(
        "What changed in the latest Django release?",
        "Find recent news about our competitor",
        "Who won the last Champions League final?",
    ),
    never_does=(
        "It never reads a whole page: it finds pages and returns titles, links and snippets (reading is "
        "Read web pages). A paid service's key never appears in a result."
    ),
    tools=(ToolDecl.from_function(web_search),),
    scopes=("web:read",),
    key=KeyRequirement(kind="api_key", description="The search service's API key",
                       required_when=lambda config: getattr(config, "method", "") in PAID,
                       # Read by people (the Builder's card, the catalog): the service by its name, not the option value.
                       when="only with Tavily, Brave Search or Exa; DuckDuckGo, the default, needs no key"),
    config_model=WebResearchConfig,
    build=build,
)
