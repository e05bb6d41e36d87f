"""Conversation search at growing message counts: the shipped search (`knowledge.conversations.search`) against
the exact reference (every match of the person's corpus ranked), same synthetic corpus (bench/retrieval.py's
loader), same queries, answers compared.

    .venv/bin/python bench/conversation_search.py [--messages 10000,1000000] [--queries 50] [--seed 7]
                                                  [--repeat 3] [--keep] [--reuse] [--window 200]

Conversations of 20 messages; the bench person owns 10% of them, the rest belong to nine other members of
the same organization; user turns name their author as the runner writes them. Each size is measured with
two-word queries ("a b": both words) and "a or b" (either word); every query set is timed --repeat times
and the median of the per-round p50/p95 is printed. "same" counts queries whose answer (conversations,
order, matched turns) equals the exact reference.

- exact: the reference — the search as first shipped: every message of the organization matching the words
  is joined to its conversation, the corpus filter (own, shared, confirmed channel threads) applied there,
  and every remaining match ranked with ts_rank_cd.
- shipped: `knowledge.conversations.search` — the person's own matches straight from the GIN index through
  the corpus lexeme of agents migration 0005 (see knowledge/conversations.py for any bound on ranking).

--reuse keeps the bench organization a previous --keep run left and grows it to each size (sizes below what
it holds are refused), so a 1M-message corpus is loaded once; use a database of its own (name bench*) per
size to compare sizes without reloading, or one run with both sizes for the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from agenticos.models import Membership, Organization, User  # noqa: E402
from bench.retrieval import (  # noqa: E402
    SLUG,
    Corpus,
    cleanup,
    grow_messages,
    ms,
    percentile,
    setup_tenant,
)
from knowledge import conversations as conv_search  # noqa: E402

# The search as first shipped (commit f677cd4), with the shipped tie-break (the newer match first).
EXACT_SQL = """
WITH q AS (SELECT websearch_to_tsquery('simple', %(query)s) AS query),
hits AS (
    SELECT m.conversation_id, m.id, ts_rank_cd(m.search_vector, q.query) AS rank
    FROM agents_message m
    JOIN agents_conversation c ON c.id = m.conversation_id, q
    WHERE c.organization_id = %(org)s
      AND c.surface <> 'schedule'
      AND (c.owner_id = %(user)s OR c.id = ANY(%(extra)s::uuid[]))
      AND m.role IN ('user', 'assistant')
      AND m.search_vector @@ q.query
),
best AS (
    SELECT conversation_id, count(*) AS turns, max(rank) AS top, sum(rank) AS total, max(id) AS newest
    FROM hits GROUP BY conversation_id
    ORDER BY top DESC, total DESC, newest DESC
    LIMIT %(limit)s
)
SELECT b.conversation_id, b.turns FROM best b ORDER BY b.top DESC, b.total DESC, b.newest DESC
"""


def exact(org_id: str, user_id: int, query: str) -> list[tuple]:
    params = {"query": query, "org": org_id, "user": user_id, "extra": conv_search.corpus_ids(org_id, user_id),
              "limit": 5}
    with connection.cursor() as cursor:
        cursor.execute(EXACT_SQL, params)
        return [(str(r[0]), int(r[1])) for r in cursor.fetchall()]


def shipped(org_id: str, user_id: int, query: str) -> list[tuple]:
    return [(h.conversation_id, h.matched_turns) for h in conv_search.search(org_id, user_id, query, limit=5)]


def measure(fn, org_id: str, user_id: int, queries: list[str]) -> tuple[list[float], list[list[tuple]]]:
    timings, answers = [], []
    for query in queries:
        started = time.perf_counter()
        answers.append(fn(org_id, user_id, query))
        timings.append(time.perf_counter() - started)
    return timings, answers


def held_messages(org: Organization) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM agents_message m JOIN agents_conversation c ON c.id = m.conversation_id "
                       "WHERE c.organization_id = %s", [str(org.pk)])
        return cursor.fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", default="10000,1000000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per query set (medians printed)")
    parser.add_argument("--keep", action="store_true", help="keep the bench organization and its rows")
    parser.add_argument("--reuse", action="store_true", help="grow the organization a --keep run left")
    parser.add_argument("--window", type=int, default=conv_search.RANK_WINDOW,
                        help=f"RANK_WINDOW for the shipped search (shipped: {conv_search.RANK_WINDOW})")
    args = parser.parse_args()
    conv_search.RANK_WINDOW = args.window
    sizes = [int(x) for x in args.messages.split(",") if x]
    variants = {"exact": exact, "shipped": shipped}

    existing = Organization.objects.filter(slug=SLUG).first()
    have = 0
    if existing is not None and args.reuse:
        have = held_messages(existing)
        if have > sizes[0]:
            sys.exit(f"--reuse: the bench organization holds {have} messages, more than {sizes[0]}.")
    elif existing is not None:
        cleanup(existing)
    org, person, agent = setup_tenant()
    corpus = Corpus(args.seed)
    others = []
    for i in range(9):
        other, _ = User.objects.get_or_create(email=f"bench-retrieval-{i}@example.com")
        Membership.objects.get_or_create(organization=org, user=other, defaults={"role": "member"})
        others.append(other)
    names = list(variants)
    print(f"PostgreSQL {connection.pg_version}; medians of {args.repeat} rounds of {args.queries} queries; "
          f"rank window {conv_search.RANK_WINDOW}")
    print(f"{'messages':>9} {'query':>7} {'matches':>8} " + " ".join(f"{n + ' p50':>13} {n + ' p95':>13}" for n in names)
          + "  " + " ".join(f"{n + ' same':>13}" for n in names[1:]))
    p50: dict[tuple[str, str, int], float] = {}
    try:
        for size in sizes:
            if have < size:
                grow_messages(corpus, org, agent, person, others, have, size)
                have = size
            words = [corpus.query_words() for _ in range(args.queries)]
            for kind, queries in (("a b", words), ("a or b", [w.replace(" ", " or ") for w in words])):
                cells, sames, answers = [], [], {}
                for name, fn in variants.items():
                    measure(fn, str(org.pk), person.pk, queries[:5])  # warm the cache
                    rounds = []
                    for _ in range(args.repeat):
                        timings, answers[name] = measure(fn, str(org.pk), person.pk, queries)
                        rounds.append((percentile(timings, 0.5), percentile(timings, 0.95)))
                    mid50 = statistics.median(r[0] for r in rounds)
                    mid95 = statistics.median(r[1] for r in rounds)
                    p50[(name, kind, size)] = mid50
                    cells.append(f"{ms(mid50):>13} {ms(mid95):>13}")
                for name in names[1:]:
                    same = sum(1 for a, b in zip(answers["exact"], answers[name], strict=True) if a == b)
                    sames.append(f"{same:>8}/{len(queries):<4}")
                matches = statistics.mean(_matches(str(org.pk), person.pk, q) for q in queries)
                print(f"{size:>9} {kind:>7} {matches:>8.1f} " + " ".join(cells) + "  " + " ".join(sames))
    finally:
        if not args.keep:
            cleanup(org)
    if len(sizes) > 1:
        first, last = sizes[0], sizes[-1]
        for kind in ("a b", "a or b"):
            for name in names:
                ratio = p50[(name, kind, last)] / p50[(name, kind, first)]
                print(f"{name:>8} {kind!r:>9}: {last} vs {first} messages {ratio:.2f}x (target <= 1.5x)")


def _matches(org_id: str, user_id: int, query: str) -> int:
    """How many of the person's messages match (what the exact reference ranks)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM agents_message m WHERE m.search_vector @@ "
                       "(websearch_to_tsquery('simple', %s) && %s::tsquery)",
                       [query, conv_search.corpus_key(org_id, user_id)])
        return cursor.fetchone()[0]


if __name__ == "__main__":
    main()
