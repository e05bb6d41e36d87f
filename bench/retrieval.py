"""Retrieval benchmark: knowledge search (hybrid, HNSW) at growing chunk counts with recall@5 against exact
search, and conversation search (full-text, GIN) at growing message counts.

    .venv/bin/python bench/retrieval.py [--chunks 1000,10000,100000] [--messages 10000,1000000]
                                        [--queries 50] [--seed 7] [--keep]

Runs against the configured database (DATABASE_URL, or the embedded dev services) with migrations applied.
It creates its own organization ("bench-retrieval"), loads a synthetic corpus with a fixed seed by COPY,
and deletes the organization at the end (unless --keep). Chunk sizes grow in place (1k, then 10k, ...).

The corpus: 384-dimension embeddings drawn around 200 topic centres (real embeddings cluster; uniform noise
would be an unrealistically hard case for any ANN index), texts of ~80 words from a Zipf vocabulary.
A query is a chunk's vector with noise plus two mid-frequency words. Latency = the whole `search()` call:
lexical candidates + vector candidates + RRF + loading the hits, timed --repeat rounds over the same queries
after a warm-up round of other queries (medians of the rounds' p50/p95 printed). recall@5 = overlap of the
HNSW top 5 with the exact top 5 (same SQL with index scans off), averaged over the queries.

Conversation search: conversations of 20 messages; the bench person owns 10% of them (the others belong
to other people of the same organization, so the corpus filter does real work).

Targets (issue 7): 100k-chunk search <= 2x the 1k time; 1M-message search <= 1.5x the 10k time;
recall@5 >= 0.95.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402

from agenticos.models import Membership, Organization, User  # noqa: E402
from agents.models import Agent  # noqa: E402
from knowledge import conversations as conv_search  # noqa: E402
from knowledge import search as ks  # noqa: E402
from knowledge.models import Collection  # noqa: E402

DIMS = 384
TOPICS = 200
VOCABULARY = 20_000
SLUG = "bench-retrieval"
HNSW_INDEX = f"chunk_embedding_hnsw_{DIMS}"
HNSW_SQL = (f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON knowledge_chunk USING hnsw "
            f"((embedding::vector({DIMS})) vector_cosine_ops) WHERE embedding_dims = {DIMS}")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * p
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


class Corpus:
    def __init__(self, seed: int):
        import numpy as np

        self.np = np
        self.rng = np.random.default_rng(seed)
        self.random = random.Random(seed)
        self.words = [f"w{i:05d}" for i in range(VOCABULARY)]
        ranks = np.arange(1, VOCABULARY + 1)
        self.zipf = (1 / ranks) / (1 / ranks).sum()
        centres = self.rng.normal(size=(TOPICS, DIMS))
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)

    def texts(self, count: int, n_words: int = 80):
        """`count` texts, drawn in one vectorized call per 10,000 (per-text sampling is the slow part)."""
        words = self.np.array(self.words)
        for start in range(0, count, 10_000):
            batch = min(10_000, count - start)
            picks = self.rng.choice(VOCABULARY, size=(batch, n_words), p=self.zipf)
            for row in words[picks]:
                yield " ".join(row)

    def vectors(self, n: int):
        np = self.np
        topics = self.rng.integers(0, TOPICS, size=n)
        points = self.centres[topics] + self.rng.normal(scale=0.35, size=(n, DIMS)) / np.sqrt(DIMS) * 4
        return points / np.linalg.norm(points, axis=1, keepdims=True)

    def query_words(self) -> str:
        return " ".join(self.random.sample(self.words[200:2000], 2))


def literal(vector) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in vector) + "]"


def setup_tenant() -> tuple[Organization, User, Agent]:
    org, _ = Organization.objects.get_or_create(slug=SLUG, defaults={"name": "Bench retrieval",
                                                                     "monthly_budget_usd": None})
    user, _ = User.objects.get_or_create(email="bench-retrieval@example.com")
    Membership.objects.get_or_create(organization=org, user=user, defaults={"role": "owner"})
    agent, _ = Agent.objects.get_or_create(organization=org, slug="bench", defaults={"name": "Bench"})
    return org, user, agent


def copy_rows(sql: str, rows) -> None:
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


# ------------------------------------------------------------------ knowledge


def grow_chunks(corpus: Corpus, org: Organization, collection: Collection, have: int, want: int, stored: list):
    """Add chunks until `want`; one document per 100 chunks. Rebuilds the HNSW index after the load."""
    n = want - have
    docs = []
    for start in range(have, want, 100):
        docs.append((str(uuid.uuid4()), start))
    now = "2026-01-01 00:00:00+00"
    copy_rows(
        "COPY knowledge_document (id, organization_id, collection_id, name, kind, file, size, sha256, source, "
        "doc_type, org_unit, status, error, chunk_count, ingested_fingerprint, created_at) FROM STDIN",
        ((doc_id, str(org.pk), str(collection.pk), f"doc-{start}.txt", "txt", "", 0, "", "", "txt", "", "ready",
          "", 100, "", now) for doc_id, start in docs),
    )
    vectors = corpus.vectors(n)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")

    def rows():
        for i, text in enumerate(corpus.texts(n)):
            doc_id, start = docs[i // 100]
            yield (str(org.pk), str(collection.pk), doc_id, i % 100, text, literal(vectors[i]), DIMS)

    copy_rows("COPY knowledge_chunk (organization_id, collection_id, document_id, position, text, embedding, "
              "embedding_dims) FROM STDIN", rows())
    stored.extend(vectors)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '512MB'")
        cursor.execute(HNSW_SQL)
        cursor.execute("VACUUM ANALYZE knowledge_chunk")
        # Statistics as autovacuum keeps them: with the documents' stale (none ready), the planner expects
        # one document and ranks every chunk by exact distance instead of using the HNSW index.
        cursor.execute("ANALYZE knowledge_document")
    return time.perf_counter() - started


def exact_top(scope: ks.Scope, vector: list[float], k: int = 5) -> list[int]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(
            f"SELECT c.id FROM knowledge_chunk c WHERE c.organization_id = %s AND c.collection_id = ANY(%s::uuid[]) "
            f"AND c.embedding_dims = {DIMS} ORDER BY c.embedding::vector({DIMS}) <=> %s::vector({DIMS}) LIMIT %s",
            [scope.organization_id, scope.collection_ids, literal(vector), k],
        )
        return [r[0] for r in cursor.fetchall()]


def bench_knowledge(corpus: Corpus, org: Organization, sizes: list[int], queries: int,
                    repeat: int = 3) -> dict[int, float]:
    collection, _ = Collection.objects.get_or_create(organization=org, name="bench")
    # The vector side needs an embedding profile on the collection; queries pass vectors directly.
    from agents.models import ModelProfile

    profile, _ = ModelProfile.objects.get_or_create(
        organization=org, label="bench-embedding",
        defaults={"kind": "embedding", "provider": "openai_compatible", "model": "bench", "base_url": "http://x"})
    collection.embedding_profile = profile
    collection.save()
    stored: list = []
    have = 0
    p50s: dict[int, float] = {}
    print(f"\nKnowledge search (hybrid: full-text + HNSW, RRF, top 5), {queries} queries per size, "
          f"medians of {repeat} rounds after a warm-up with other queries")
    print(f"{'chunks':>9} {'index build':>12} {'p50':>11} {'p95':>11} {'recall@5':>9}")
    for size in sizes:
        build = grow_chunks(corpus, org, collection, have, size, stored)
        have = size
        scope = ks.resolve_scope(str(org.pk), [str(collection.pk)])

        def probes(n: int) -> list[tuple[list[float], str]]:
            picked = []
            for index in corpus.random.sample(range(len(stored)), min(n, len(stored))):
                noisy = stored[index] + corpus.rng.normal(scale=0.02, size=DIMS)
                picked.append(((noisy / corpus.np.linalg.norm(noisy)).tolist(), corpus.query_words()))
            return picked

        def run(batch: list[tuple[list[float], str]], scope: ks.Scope = scope) -> list[float]:
            timings = []
            for vector, text in batch:
                started = time.perf_counter()
                ks.search(scope, [text], top_k=5, filters=ks.Filters(), embed_query=lambda c, t, v=vector: v)
                timings.append(time.perf_counter() - started)
            return timings

        # A serving database has its index pages cached: warm it with queries other than the timed ones.
        run(probes(queries))
        batch = probes(queries)
        rounds = [run(batch) for _ in range(repeat)]
        p50s[size] = statistics.median(percentile(r, 0.5) for r in rounds)
        p95 = statistics.median(percentile(r, 0.95) for r in rounds)
        recalls = []
        for vector, _text in batch:
            approx = ks.vector_candidates(scope, scope.collection_ids, vector, ks.Filters(), limit=5)
            exact = exact_top(scope, vector)
            recalls.append(len(set(approx) & set(exact)) / max(1, len(exact)))
        print(f"{size:>9} {build:>10.1f} s {ms(p50s[size])} {ms(p95)} {statistics.mean(recalls):>9.3f}")
    return p50s


# ------------------------------------------------------------------ conversations


def grow_messages(corpus: Corpus, org: Organization, agent: Agent, person: User, others: list[User],
                  have: int, want: int) -> None:
    per = 20
    conversations = []
    for n in range(have // per, want // per):
        owner = person if n % 10 == 0 else others[n % len(others)]
        conversations.append((str(uuid.uuid4()), owner.pk))
    now = "2026-01-01 00:00:00+00"
    copy_rows(
        "COPY agents_conversation (id, organization_id, agent_id, owner_id, surface, title, external_key, state, "
        "created_at, last_active_at) FROM STDIN",
        ((cid, str(org.pk), str(agent.pk), owner, "web", f"Conversation {cid[:8]}", "", "{}", now, now)
         for cid, owner in conversations),
    )

    def rows():
        texts = corpus.texts(len(conversations) * per, n_words=30)
        for cid, owner in conversations:
            for turn in range(per):
                # As the runner writes them: a user turn names its author (the owner), an answer nobody.
                user_turn = turn % 2 == 0
                yield (cid, "user" if user_turn else "assistant", owner if user_turn else None, "", next(texts),
                       "", "[]", "[]", now)

    copy_rows("COPY agents_message (conversation_id, role, author_id, author_label, content, thinking, parts, "
              "attachments, created_at) FROM STDIN", rows())
    with connection.cursor() as cursor:
        # A bulk load leaves GIN entries in the index's pending list (scanned linearly by every search)
        # until autovacuum merges them; a live system has merged them long before, so merge them now.
        cursor.execute("VACUUM ANALYZE agents_message")
        cursor.execute("ANALYZE agents_conversation")


def bench_conversations(corpus: Corpus, org: Organization, agent: Agent, person: User, sizes: list[int],
                        queries: int, use_or: bool = False, repeat: int = 3) -> dict[int, float]:
    others = []
    for i in range(9):
        other, _ = User.objects.get_or_create(email=f"bench-retrieval-{i}@example.com")
        Membership.objects.get_or_create(organization=org, user=other, defaults={"role": "member"})
        others.append(other)
    have = 0
    p50s: dict[int, float] = {}
    kind = "two words joined by or" if use_or else "two words (websearch default: both)"
    print(f"\nConversation search (websearch_to_tsquery 'simple', GIN, ts_rank_cd), {queries} queries "
          f"of {kind} per size")
    print(f"{'messages':>9} {'load':>10} {'p50':>11} {'p95':>11} {'hits/query':>11}")
    for size in sizes:
        started = time.perf_counter()
        grow_messages(corpus, org, agent, person, others, have, size)
        load = time.perf_counter() - started
        have = size
        batch = [corpus.query_words() for _ in range(queries)]
        if use_or:
            batch = [query.replace(" ", " or ") for query in batch]
        for query in batch[:10]:  # warm-up
            conv_search.search(str(org.pk), person.pk, query, limit=5)
        rounds, hits = [], []
        for _ in range(repeat):  # the same queries each round; medians of the rounds' p50/p95 printed
            timings = []
            for query in batch:
                t0 = time.perf_counter()
                found = conv_search.search(str(org.pk), person.pk, query, limit=5)
                timings.append(time.perf_counter() - t0)
                hits.append(len(found))
            rounds.append((percentile(timings, 0.5), percentile(timings, 0.95)))
        p50s[size] = statistics.median(r[0] for r in rounds)
        print(f"{size:>9} {load:>8.1f} s {ms(p50s[size])} {ms(statistics.median(r[1] for r in rounds))} "
              f"{statistics.mean(hits):>11.1f}")
    return p50s


def cleanup(org: Organization) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM knowledge_chunk WHERE organization_id = %s", [str(org.pk)])
        cursor.execute("DELETE FROM agents_message WHERE conversation_id IN "
                       "(SELECT id FROM agents_conversation WHERE organization_id = %s)", [str(org.pk)])
    org.delete()
    User.objects.filter(email__startswith="bench-retrieval").delete()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", default="1000,10000,100000")
    parser.add_argument("--messages", default="10000,1000000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds of queries (medians printed)")
    parser.add_argument("--keep", action="store_true", help="keep the bench organization and its rows")
    parser.add_argument("--or-queries", action="store_true",
                        help="conversation queries as 'a or b' (every message with either word is ranked)")
    args = parser.parse_args()
    chunk_sizes = [int(x) for x in args.chunks.split(",") if x]
    message_sizes = [int(x) for x in args.messages.split(",") if x]

    with connection.cursor() as cursor:
        cursor.execute("SELECT version(), extversion FROM pg_extension WHERE extname = 'vector'")
        pg_version, vector_version = cursor.fetchone()
    print(f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"Database: {pg_version.split(',')[0]}, pgvector {vector_version}")
    existing = Organization.objects.filter(slug=SLUG).first()
    if existing is not None:
        cleanup(existing)
    corpus = Corpus(args.seed)
    org, person, agent = setup_tenant()
    out = io.StringIO()
    try:
        if chunk_sizes:
            k = bench_knowledge(corpus, org, chunk_sizes, args.queries, args.repeat)
            if len(k) > 1:
                first, last = chunk_sizes[0], chunk_sizes[-1]
                print(f"{last} vs {first} chunks: {k[last] / k[first]:.2f}x (target <= 2x)", file=out)
        if message_sizes:
            c = bench_conversations(corpus, org, agent, person, message_sizes, args.queries, args.or_queries,
                                    args.repeat)
            if len(c) > 1:
                first, last = message_sizes[0], message_sizes[-1]
                print(f"{last} vs {first} messages: {c[last] / c[first]:.2f}x (target <= 1.5x)", file=out)
    finally:
        if not args.keep:
            cleanup(org)
        with connection.cursor() as cursor:
            cursor.execute(HNSW_SQL)  # the load dropped it; leave the database as migrations made it
    print("\n" + out.getvalue().strip())


if __name__ == "__main__":
    main()
