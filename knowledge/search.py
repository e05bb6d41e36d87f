"""Hybrid search over chunks: full-text and vector candidates fused by reciprocal rank fusion (RRF).

Scope is decided by the caller before anything is searched: one organization and the collection ids the
agent's spec binds (intersected with the organization's own collections here, so a foreign or deleted
id matches nothing). Business filters only narrow that scope. Every query carries the organization id.

- Lexical: passages holding every word of the query (`plainto_tsquery('simple', …)`), then, when too
  few, passages holding any of them (OR); `ts_rank_cd` orders them, over at most 200 matches per pass
  (the first the index returns: a bound on work, not a choice of the best).
- Vector: cosine distance on the HNSW partial index of the collection's embedding length, with
  pgvector's iterative scan so a collection filter still returns `k` rows.
- Fusion: score = Σ 1 / (60 + rank) over every list a chunk appears in.
- Parent context: grows each passage outward from the match (never shortened), capped at 8,000 added
  characters per result and 24,000 per search, stopping at the first neighbour that does not fit or was
  already returned, so a passage is always contiguous and no text is returned twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from knowledge.models import INDEXED_DIMENSIONS, PAGED_KINDS, Chunk, Collection

RRF_K = 60
CANDIDATES_PER_LIST = 50
ADDED_PER_RESULT = 8_000
ADDED_PER_SEARCH = 24_000
PARENT_NEIGHBOURS = 40
# HNSW candidate list per vector search (pgvector's default is 40); bench/retrieval.py measures recall@5.
EF_SEARCH = 120


@dataclass(frozen=True)
class Filters:
    """Business filters: they narrow the scope, never widen it (no tenant or collection field here)."""

    source: str | None = None
    doc_type: str | None = None
    org_unit: str | None = None
    date_from: dt.date | None = None
    date_to: dt.date | None = None

    def is_empty(self) -> bool:
        return not any((self.source, self.doc_type, self.org_unit, self.date_from, self.date_to))

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in (
            ("source", self.source), ("doc_type", self.doc_type), ("org_unit", self.org_unit),
            ("date_from", self.date_from), ("date_to", self.date_to)) if v]
        return ", ".join(parts)


@dataclass
class Hit:
    chunk_id: int
    document_id: str
    document_name: str
    kind: str
    page: int | None
    position: int
    text: str
    score: float
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)

    @property
    def expanded(self) -> bool:
        return bool(self.before or self.after)

    def citation(self) -> str:
        where = f", page {self.page}" if self.kind in PAGED_KINDS and self.page else ""
        extra = " (with surrounding text)" if self.expanded else ""
        return f"{self.document_name}{where}{extra}"

    def passage(self) -> str:
        return "\n".join([*self.before, self.text, *self.after])


@dataclass
class Scope:
    organization_id: str
    collections: list[Collection]

    @property
    def collection_ids(self) -> list[str]:
        return [str(c.pk) for c in self.collections]


def resolve_scope(organization_id: str, collection_ids: Iterable[str]) -> Scope:
    """The organization's collections among `collection_ids` (a foreign or unknown id just drops out)."""
    import uuid

    ids = []
    for raw in collection_ids:
        try:
            ids.append(uuid.UUID(str(raw)))
        except ValueError:
            continue
    collections = list(
        Collection.objects.filter(organization_id=organization_id, pk__in=ids).select_related("embedding_profile")
    )
    return Scope(organization_id=str(organization_id), collections=collections)


# ------------------------------------------------------------------ candidate lists


def _filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    sql: list[str] = []
    params: list[Any] = []
    for column, value in (("d.source", filters.source), ("d.doc_type", filters.doc_type),
                          ("d.org_unit", filters.org_unit)):
        if value:
            sql.append(f"lower({column}) = lower(%s)")
            params.append(value)
    if filters.date_from:
        sql.append("d.document_date >= %s")
        params.append(filters.date_from)
    if filters.date_to:
        sql.append("d.document_date <= %s")
        params.append(filters.date_to)
    return "".join(f" AND {s}" for s in sql), params


LEXICAL_RANKED_MAX = 200

LEXICAL_SQL = """
    WITH q AS (SELECT {tsquery} AS query),
    matches AS (
        SELECT c.id, c.search_vector
        FROM knowledge_chunk c
        JOIN knowledge_document d ON d.id = c.document_id, q
        WHERE c.organization_id = %s AND c.collection_id = ANY(%s::uuid[]) AND d.status = 'ready'
          AND c.search_vector @@ q.query {extra}
        LIMIT %s
    )
    SELECT m.id FROM matches m, q
    ORDER BY ts_rank_cd(m.search_vector, q.query) DESC, m.id
    LIMIT %s
"""
ALL_WORDS = "plainto_tsquery('simple', %s)"
ANY_WORD = "to_tsquery('simple', replace(plainto_tsquery('simple', %s)::text, ' & ', ' | '))"


def lexical_candidates(scope: Scope, query: str, filters: Filters, limit: int = CANDIDATES_PER_LIST) -> list[int]:
    """Passages with every word of the query first; when those are too few, passages with any of them.

    A question's words are rarely all in one passage, so the second pass ORs them; with the `simple`
    configuration nothing drops "the" or "what", so an OR can match most of a corpus. Ranking every match
    would grow with the corpus: at most LEXICAL_RANKED_MAX matches are ranked (the vector side still sees
    everything).
    """
    if not scope.collections or not query.strip():
        return []
    extra, params = _filter_sql(filters)
    found: list[int] = []
    for tsquery in (ALL_WORDS, ANY_WORD):
        sql = LEXICAL_SQL.format(tsquery=tsquery, extra=extra)
        with connection.cursor() as cursor:
            cursor.execute(sql, [query, scope.organization_id, scope.collection_ids, *params, LEXICAL_RANKED_MAX,
                                 limit])
            for (chunk_id,) in cursor.fetchall():
                if chunk_id not in found:
                    found.append(chunk_id)
        if len(found) >= limit:
            break
    return found[:limit]


def vector_candidates(
    scope: Scope, collection_ids: list[str], vector: list[float], filters: Filters, limit: int = CANDIDATES_PER_LIST
) -> list[int]:
    if not collection_ids or not vector:
        return []
    dims = len(vector)
    extra, params = _filter_sql(filters)
    literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
    # The cast must match the partial index expression exactly for the planner to use it.
    column = f"c.embedding::vector({dims})" if dims in INDEXED_DIMENSIONS else "c.embedding"
    probe = f"%s::vector({dims})"
    sql = f"""
        SELECT c.id FROM knowledge_chunk c
        JOIN knowledge_document d ON d.id = c.document_id
        WHERE c.organization_id = %s AND c.collection_id = ANY(%s::uuid[]) AND c.embedding_dims = {dims:d}
          AND d.status = 'ready' {extra}
        ORDER BY {column} <=> {probe}
        LIMIT %s
    """  # noqa: S608 - dims is an int; values are parameters
    with transaction.atomic(), connection.cursor() as cursor:
        # Filtered HNSW scans keep scanning until `limit` rows pass the filter (pgvector >= 0.8).
        cursor.execute(f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {EF_SEARCH:d}")
        cursor.execute(sql, [scope.organization_id, collection_ids, *params, literal, limit])
        return [row[0] for row in cursor.fetchall()]


def rrf(rankings: Iterable[list[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: best first, ties broken by chunk id for a stable order."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


# ------------------------------------------------------------------ the search


@dataclass
class SearchOutcome:
    hits: list[Hit]
    lexical_only: bool
    # collections whose embedding model failed this time (searched by words only)
    degraded: list[str] = field(default_factory=list)


Embedder = Callable[[Collection, str], list[float] | None]


def search(
    scope: Scope,
    queries: list[str],
    *,
    top_k: int,
    filters: Filters,
    embed_query: Embedder | None = None,
    parent_context: str = "off",
    vector_texts: list[str] | None = None,
) -> SearchOutcome:
    """Search every query (the original first, then variants) and fuse all candidate lists.

    `embed_query(collection, text)` returns the query's vector in that collection's embedding space (None
    when it cannot: the collection is then searched by words only and named in `degraded`).
    `vector_texts` replaces the texts embedded for the vector side (HyDE embeds a hypothetical answer).
    """
    rankings: list[list[int]] = []
    degraded: list[str] = []
    by_profile: dict[str, list[Collection]] = {}
    for collection in scope.collections:
        if collection.embedding_profile_id:
            by_profile.setdefault(str(collection.embedding_profile_id), []).append(collection)
    lexical_only = not by_profile
    for query in queries:
        rankings.append(lexical_candidates(scope, query, filters))
    for collections in by_profile.values():
        for text in vector_texts or queries:
            vector = embed_query(collections[0], text) if embed_query else None
            if vector is None:
                degraded += [c.name for c in collections if c.name not in degraded]
                continue
            rankings.append(vector_candidates(scope, [str(c.pk) for c in collections], vector, filters))
    fused = rrf(rankings)[:top_k]
    hits = _load_hits(scope, fused)
    if parent_context in ("window", "parent"):
        expand(scope, hits, parent_context)
    return SearchOutcome(hits=hits, lexical_only=lexical_only, degraded=degraded)


def _load_hits(scope: Scope, fused: list[tuple[int, float]]) -> list[Hit]:
    ids = [chunk_id for chunk_id, _ in fused]
    # Only what a hit shows: the embedding (hundreds of floats parsed per row) and the tsvector stay behind,
    # and the order is the fusion's, not the model's default (a join and sort over collections).
    rows = {
        c.pk: c
        for c in Chunk.objects.filter(
            pk__in=ids, organization_id=scope.organization_id, collection_id__in=scope.collection_ids
        ).select_related("document").only(
            "id", "document_id", "page", "position", "text", "document__name", "document__kind"
        ).order_by()
    }
    hits = []
    for chunk_id, score in fused:
        chunk = rows.get(chunk_id)
        if chunk is None:
            continue
        hits.append(Hit(
            chunk_id=chunk.pk, document_id=str(chunk.document_id), document_name=chunk.document.name,
            kind=chunk.document.kind, page=chunk.page, position=chunk.position, text=chunk.text, score=score,
        ))
    return hits


def expand(scope: Scope, hits: list[Hit], mode: str) -> None:
    """Small-to-big: add neighbouring text around each hit, in rank order, within the caps."""
    returned: set[tuple[str, int]] = {(h.document_id, h.position) for h in hits}
    budget = ADDED_PER_SEARCH
    reach = 1 if mode == "window" else PARENT_NEIGHBOURS
    for hit in hits:
        neighbours = {
            c.position: c.text
            for c in Chunk.objects.filter(
                organization_id=scope.organization_id, collection_id__in=scope.collection_ids,
                document_id=hit.document_id, position__gte=max(0, hit.position - reach),
                position__lte=hit.position + reach,
            ).only("position", "text")
        }
        allowance = min(ADDED_PER_RESULT, budget)
        used = 0
        open_sides = {"before": True, "after": True}
        step = 1
        while any(open_sides.values()) and step <= reach:
            # nearest text first: one step back, then one forward, then the next ring
            for side, position in (("before", hit.position - step), ("after", hit.position + step)):
                if not open_sides[side]:
                    continue
                text = neighbours.get(position)
                key = (hit.document_id, position)
                if text is None or key in returned or used + len(text) > allowance:
                    open_sides[side] = False
                    continue
                if side == "before":
                    hit.before.insert(0, text)
                else:
                    hit.after.append(text)
                returned.add(key)
                used += len(text)
            step += 1
        budget -= used


def render(outcome: SearchOutcome, *, query: str, inferred: Filters | None = None) -> str:
    lines: list[str] = []
    if inferred is not None and not inferred.is_empty():
        lines.append(
            f"Filters inferred from the question: {inferred.describe()}. "
            "To search without them, call again with infer_filters=false."
        )
    if outcome.lexical_only:
        lines.append(
            "Lexical search only: no embedding model is configured for these collections, so only passages "
            "sharing words with the query are found. If nothing fits, try the words a document would use."
        )
    elif outcome.degraded:
        lines.append(
            "The embedding model did not answer, so these collections were searched by words only this time: "
            + ", ".join(outcome.degraded) + "."
        )
    if not outcome.hits:
        lines.append(f"No passages found for {query!r}. Try other words, or fewer filters.")
        return "\n".join(lines)
    lines.append(f"{len(outcome.hits)} passage(s) for {query!r}, best first. Cite the document (and page) you use.")
    for number, hit in enumerate(outcome.hits, start=1):
        lines.append("")
        lines.append(f"[{number}] {hit.citation()}")
        lines.append(hit.passage())
    return "\n".join(lines)
