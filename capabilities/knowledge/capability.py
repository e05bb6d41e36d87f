"""Knowledge search: `search_documents` over the collections the agent's spec binds.

The model asks what, never where: the collections come from the frozen spec (`collection_ids`),
intersected with the run's organization when the tool runs, so an unbound or foreign collection is
unreachable — filters (the model's or inferred) only narrow that scope. Bound without collections, the
capability attaches nothing: a search tool that always answers "nothing" makes a model reason from silence.

Extra model calls (self-query, multi-query, HyDE) run on the agent's own model, are checked against the
run's budget before they are sent and recorded in the spend ledger as model requests of this run; any
failure or a used-up budget falls back to searching the query as written.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from decimal import Decimal
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset
from knowledge.runtime import spec_for

logger = logging.getLogger(__name__)

MAX_ORG_UNITS_FOR_INFERENCE = 200


class KnowledgeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default_top_k: int = Field(default=5, ge=1, le=50, description="Results when the model asks for no number.")
    self_query_enabled: bool = Field(
        default=False,
        description="Derive business filters (source, type, unit, dates) from the question when the model gave none.",
    )
    query_analysis_mode: Literal["off", "multi_query", "hyde"] = Field(
        default="off", description="Widen the search before it runs: a question asked in other words finds more.",
        json_schema_extra={"x-enum-labels": {"off": "Search the question as asked",
                                             "multi_query": "Also search with rewordings of the question",
                                             "hyde": "Also search with a drafted answer"}},
    )
    query_analysis_max_variants: int = Field(default=3, ge=1, le=5,
                                             description="How many rewordings, when searching with rewordings.")
    parent_context: Literal["off", "window", "parent"] = Field(
        default="off", description="How much surrounding text comes back with each match.",
        json_schema_extra={"x-enum-labels": {"off": "The matching passage only", "window": "The passages around it",
                                             "parent": "The whole section it is in"}},
    )


async def search_documents(
    ctx: RunContext[Any],
    query: str,
    top_k: int | None = None,
    source: str | None = None,
    doc_type: str | None = None,
    org_unit: str | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    infer_filters: bool = True,
) -> str:
    """Search the organization's documents bound to this agent for passages relevant to a question.

    Use it before answering anything the organization's own documents may cover (policies, manuals,
    contracts, reports), and cite what you use. You choose what to search for, never where: the
    collections are fixed by the agent's setup.

    Args:
        query: What to find, in the words a document would use; a full question works.
        top_k: How many passages to return, 1-50. Default: the agent's setting (5 unless changed).
        source: Only documents from this source (exact, case-insensitive). Default: any.
        doc_type: Only this document type, e.g. pdf, docx, md, csv. Default: any.
        org_unit: Only documents of this organizational unit. Default: any.
        date_from: Only documents dated on or after this day (YYYY-MM-DD). Default: no lower bound.
        date_to: Only documents dated on or before this day (YYYY-MM-DD). Default: no upper bound.
        infer_filters: When filters were inferred from your question, false repeats the search without them.

    Returns:
        Numbered passages, best first, each headed by its citation: the document name, plus the page for
        PDFs and presentations, and "(with surrounding text)" when neighbouring text was added. The first
        line says when the search matched words only (no embedding model) or used inferred filters.
        No match comes back as a sentence saying so.
    """
    from knowledge import search as ks

    state: _State = ctx.deps.scratch["knowledge"]
    config = state.config
    if not query.strip():
        return failures.retry(ctx, "query is empty: say what to look for.")
    if top_k is not None and not 1 <= top_k <= 50:
        return failures.retry(ctx, f"top_k must be between 1 and 50 (got {top_k}); omit it for the default.")
    if date_from and date_to and date_from > date_to:
        return failures.retry(ctx, "date_from is after date_to: swap them or drop one.")
    filters = ks.Filters(source=source, doc_type=doc_type, org_unit=org_unit, date_from=date_from, date_to=date_to)
    scope = await sync_to_async(ks.resolve_scope)(ctx.deps.organization_id, state.collection_ids)
    if not scope.collections:
        return failures.refuse("The collections bound to this agent no longer exist in this organization.")

    inferred: ks.Filters | None = None
    if config.self_query_enabled and filters.is_empty() and infer_filters:
        inferred = await _infer_filters(ctx, state, scope, query)
        if inferred is not None and not inferred.is_empty():
            filters = inferred
    queries = [query]
    vector_texts: list[str] | None = None
    if config.query_analysis_mode == "multi_query":
        queries += await _variants(ctx, state, query, config.query_analysis_max_variants)
    elif config.query_analysis_mode == "hyde" and any(c.embedding_profile_id for c in scope.collections):
        answer = await _hypothetical_answer(ctx, state, query)
        if answer:
            vector_texts = [answer]

    def embed_query(collection, text: str) -> list[float] | None:
        return _embed_query(ctx.deps, state, collection, text)

    outcome = await sync_to_async(ks.search)(
        scope, queries, top_k=top_k or config.default_top_k, filters=filters, embed_query=embed_query,
        parent_context=config.parent_context, vector_texts=vector_texts,
    )
    return ks.render(outcome, query=query, inferred=inferred)


class _State:
    def __init__(self, config: KnowledgeConfig, collection_ids: list[str], agent_budget: Decimal | None):
        self.config = config
        self.collection_ids = collection_ids
        self.agent_budget = agent_budget


# ------------------------------------------------------------------ embeddings at query time


def _embed_query(deps: Any, state: _State, collection: Any, text: str) -> list[float] | None:
    """Sync. Every cap checked before, the spend recorded against the run after (knowledge/usage.py); a
    failure degrades that collection to words only."""
    from agenticos.models import Organization
    from knowledge import usage
    from knowledge.embeddings import EmbeddingError, embed
    from knowledge.services import record_embedding_spend

    profile = collection.embedding_profile
    meter = usage.meter_for(deps)
    cap = usage.exhausted_cap(meter, state.agent_budget)
    if cap is not None:
        logger.info("query embedding skipped: %s is used up", cap.label)
        return None
    try:
        result = embed(profile, [text])
    except EmbeddingError as exc:
        logger.info("query embedding skipped: %s", exc)
        return None
    record_embedding_spend(
        Organization.objects.get(pk=deps.organization_id), profile, result.tokens, result.cost_usd,
        result.is_partial, run_id=meter.run_id, agent_id=meter.agent_id, surface=meter.surface,
    )
    return result.vectors[0] if result.vectors else None


# ------------------------------------------------------------------ extra model calls


async def _ask_model(ctx: RunContext[Any], state: _State, instructions: str, prompt: str) -> str | None:
    """One request on the run's own model, metered like the agent's (knowledge/usage.py). None when it
    cannot be made: the search then goes on as written."""
    from knowledge import usage

    return await usage.ask_model(ctx.deps, ctx.model, instructions=instructions, prompt=prompt,
                                 agent_budget=state.agent_budget)


async def _variants(ctx: RunContext[Any], state: _State, query: str, count: int) -> list[str]:
    text = await _ask_model(
        ctx, state,
        f"Rewrite the search query in {count} different ways that a document answering it might use. "
        "One rewording per line, no numbering, nothing else.",
        query,
    )
    if not text:
        return []
    lines = [line.strip(" -*\t0123456789.") for line in text.splitlines()]
    seen = {query.strip().lower()}
    out = []
    for line in lines:
        if line and line.lower() not in seen:
            seen.add(line.lower())
            out.append(line)
    return out[:count]


async def _hypothetical_answer(ctx: RunContext[Any], state: _State, query: str) -> str | None:
    return await _ask_model(
        ctx, state,
        "Write a short passage (3-5 sentences) that would answer the question as a company document would. "
        "Plausible wording matters, facts do not.",
        query,
    )


async def _infer_filters(ctx: RunContext[Any], state: _State, scope: Any, query: str) -> Any:
    """Self-query: business filters from the question, validated like the model's own. Never a tenant,
    collection or document id; an organizational unit only if the bound collections really hold it."""
    from knowledge import search as ks

    facets = await sync_to_async(_facets)(scope)
    units = facets["org_units"] if len(facets["org_units"]) <= MAX_ORG_UNITS_FOR_INFERENCE else []
    instructions = (
        "Derive search filters from the question. Answer with one JSON object and nothing else, with any of "
        'the keys "source", "doc_type", "org_unit", "date_from", "date_to" (dates as YYYY-MM-DD) that the '
        "question clearly implies; {} when it implies none. "
        f"Today is {timezone.localdate().isoformat()}. Known sources: {facets['sources'][:50]}. "
        f"Known document types: {facets['doc_types'][:50]}. Known organizational units: {units}."
    )
    for attempt in range(2):  # a second request only when the first output needs correcting
        text = await _ask_model(ctx, state, instructions, query if attempt == 0 else
                                f"{query}\n\nYour previous answer was not a valid JSON object; answer again.")
        if text is None:
            return None
        try:
            data = json.loads(text.strip().removeprefix("```json").removeprefix("```").removesuffix("```"))
            if not isinstance(data, dict):
                raise ValueError("not an object")
            return ks.Filters(
                source=_known(data.get("source"), facets["sources"]),
                doc_type=_known(data.get("doc_type"), facets["doc_types"]),
                org_unit=_known(data.get("org_unit"), units),
                date_from=_date(data.get("date_from")),
                date_to=_date(data.get("date_to")),
            )
        except (ValueError, TypeError):
            continue
    return None


def _known(value: Any, known: list[str]) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    lowered = {k.lower(): k for k in known}
    return lowered.get(value.strip().lower())


def _date(value: Any) -> dt.date | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value.strip())
    except ValueError:
        return None


def _facets(scope: Any) -> dict[str, list[str]]:
    from knowledge.models import Document

    docs = Document.objects.filter(organization_id=scope.organization_id, collection_id__in=scope.collection_ids,
                                   status=Document.Status.READY)

    def distinct(field: str) -> list[str]:
        return sorted(v for v in docs.exclude(**{field: ""}).values_list(field, flat=True).distinct() if v)

    return {"sources": distinct("source"), "doc_types": distinct("doc_type"), "org_units": distinct("org_unit")}


# ------------------------------------------------------------------ build


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, KnowledgeConfig)
    spec = spec_for(ctx)
    collection_ids = list(spec.collection_ids) if spec is not None else []
    if not collection_ids:
        return []
    agent_budget = spec.budget.monthly_usd if spec is not None else None
    ctx.deps.scratch["knowledge"] = _State(ctx.config, collection_ids, agent_budget)
    return [function_toolset([search_documents])]


CAPABILITY = Capability(
    id="knowledge",
    name="Knowledge search",
    category="knowledge",
    description="Searches the organization's document collections bound to this agent and cites what it uses.",
    offers="answers from the organization's own documents, with citations",
    examples=(
        "What does our travel policy say about per diems?",
        "Find the SLA terms in the Acme contract.",
        "Which onboarding documents mention laptop setup?",
    ),
    never_does=(
        "It never searches a collection that is not bound to this agent: the model chooses what to search "
        "for, never where, and filters only narrow the search."
    ),
    tools=(ToolDecl.from_function(search_documents),),
    scopes=("knowledge:read",),
    config_model=KnowledgeConfig,
    voice="live",
    build=build,
)
