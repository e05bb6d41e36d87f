"""Conversation search at growing message counts: the shipped SQL (`knowledge.conversations.search`) against
two restructurings, on the same synthetic corpus (bench/retrieval.py's loader), same queries, answers compared.

    .venv/bin/python bench/conversation_search.py [--messages 10000,1000000] [--queries 50] [--seed 7]
                                                  [--keep] [--proposed]

Conversations of 20 messages; the bench person owns 10% of them, the rest belong to nine other members of
the same organization. Each size is measured with two-word queries ("a b": both words) and "a or b"
(either word). "same" counts queries whose answer (conversations, order, matched turns) equals the
shipped one.

- shipped: one join; the corpus filter (owner or shared) is checked on the conversation of every message
  that matches the words anywhere in the organization.
- ids-first: the person's conversation ids are fetched first and the messages searched with
  `conversation_id = ANY(ids)` (GIN and the conversation_id btree combined).
- owner-lexeme (--proposed, an agents migration proposed in issue 7, not shipped): the message trigger adds
  one lexeme naming the conversation's owner (' o<user id>', which no query can produce: the parser never
  emits a space) to `search_vector`, and the query ANDs it in, so the GIN index itself returns only the
  person's matches. With --proposed the bench installs that trigger in the database it runs against and
  removes it at the end: use a database of your own (its name must start with "bench").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings")

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


def _with_hits(hits: str) -> str:
    """The shipped SQL with its `hits` CTE replaced (ranking, grouping and the passage unchanged)."""
    sql = conv_search.SEARCH_SQL
    start = sql.index("hits AS (\n") + len("hits AS (\n")
    return sql[:start] + hits + sql[sql.index("\n),\nbest AS"):]


RANKED = "SELECT m.conversation_id, m.id, ts_rank_cd(m.search_vector, q.query) AS rank FROM agents_message m, q"
IDS_FIRST_SQL = _with_hits(f"""    {RANKED}
    WHERE m.conversation_id = ANY(%(ids)s::uuid[])
      AND m.role IN ('user', 'assistant') AND m.search_vector @@ q.query""")

# Owned conversations through the owner lexeme (one GIN scan returns only the person's matches), then the
# conversations shared with them (other owners) by id.
OWNER_LEXEME_SQL = _with_hits(f"""    {RANKED}
    WHERE m.search_vector @@ (q.query && %(owner)s::tsquery)
      AND m.role IN ('user', 'assistant')
      AND m.conversation_id IN (SELECT c.id FROM agents_conversation c WHERE c.organization_id = %(org)s
                                AND c.surface <> 'schedule' AND c.id <> %(exclude)s)
    UNION ALL
    {RANKED}
    WHERE m.conversation_id = ANY(%(extra)s::uuid[]) AND m.conversation_id <> %(exclude)s
      AND m.role IN ('user', 'assistant') AND m.search_vector @@ q.query
      AND NOT m.search_vector @@ %(owner)s::tsquery""")

PROPOSED_TRIGGER = """
CREATE OR REPLACE FUNCTION bench_message_owner_lexeme() RETURNS trigger AS $$
BEGIN
    NEW.search_vector := NEW.search_vector || array_to_tsvector(ARRAY[' o' || coalesce(
        (SELECT owner_id::text FROM agents_conversation WHERE id = NEW.conversation_id), '-')]);
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER bench_message_owner_lexeme_trg BEFORE INSERT ON agents_message
    FOR EACH ROW EXECUTE FUNCTION bench_message_owner_lexeme();
"""
DROP_TRIGGER = ("DROP TRIGGER IF EXISTS bench_message_owner_lexeme_trg ON agents_message; "
                "DROP FUNCTION IF EXISTS bench_message_owner_lexeme();")
EXCLUDE_NONE = "00000000-0000-0000-0000-000000000000"


def _run(sql: str, params: dict) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(str(r[0]), int(r[3])) for r in cursor.fetchall()]


def shipped(org_id: str, user_id: int, query: str) -> list[tuple]:
    return [(h.conversation_id, h.matched_turns) for h in conv_search.search(org_id, user_id, query, limit=5)]


def ids_first(org_id: str, user_id: int, query: str) -> list[tuple]:
    from django.db.models import Q

    from agents.models import Conversation

    extra = conv_search.corpus_ids(org_id, user_id)
    ids = [str(pk) for pk in Conversation.objects.filter(organization_id=org_id).exclude(surface="schedule")
           .filter(Q(owner_id=user_id) | Q(pk__in=extra)).values_list("pk", flat=True)]
    return _run(IDS_FIRST_SQL, {"query": query, "ids": ids, "limit": 5})


def owner_lexeme(org_id: str, user_id: int, query: str) -> list[tuple]:
    return _run(OWNER_LEXEME_SQL, {"query": query, "owner": f"' o{user_id}'", "org": org_id,
                                   "extra": conv_search.corpus_ids(org_id, user_id), "exclude": EXCLUDE_NONE,
                                   "limit": 5})


def measure(fn, org_id: str, user_id: int, queries: list[str]) -> tuple[list[float], list[list[tuple]]]:
    timings, answers = [], []
    for query in queries:
        started = time.perf_counter()
        answers.append(fn(org_id, user_id, query))
        timings.append(time.perf_counter() - started)
    return timings, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", default="10000,1000000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the bench organization and its rows")
    parser.add_argument("--proposed", action="store_true",
                        help="also measure the proposed owner lexeme (installs a trigger: own database only)")
    args = parser.parse_args()
    sizes = [int(x) for x in args.messages.split(",") if x]
    variants = {"shipped": shipped, "ids-first": ids_first}
    if args.proposed:
        if not connection.settings_dict["NAME"].startswith("bench"):
            sys.exit("--proposed changes agents_message's trigger: run it against a database named bench*.")
        variants["owner-lexeme"] = owner_lexeme

    existing = Organization.objects.filter(slug=SLUG).first()
    if existing is not None:
        cleanup(existing)
    org, person, agent = setup_tenant()
    corpus = Corpus(args.seed)
    others = []
    for i in range(9):
        other, _ = User.objects.get_or_create(email=f"bench-retrieval-{i}@example.com")
        Membership.objects.get_or_create(organization=org, user=other, defaults={"role": "member"})
        others.append(other)
    if args.proposed:
        with connection.cursor() as cursor:
            cursor.execute(DROP_TRIGGER)
            cursor.execute(PROPOSED_TRIGGER)
    names = list(variants)
    print(f"{'messages':>9} {'query':>7} " + " ".join(f"{n + ' p50':>17} {n + ' p95':>17}" for n in names)
          + "  " + " ".join(f"{n + ' same':>17}" for n in names[1:]))
    p50: dict[tuple[str, str, int], float] = {}
    have = 0
    try:
        for size in sizes:
            grow_messages(corpus, org, agent, person, others, have, size)
            have = size
            words = [corpus.query_words() for _ in range(args.queries)]
            for kind, queries in (("a b", words), ("a or b", [w.replace(" ", " or ") for w in words])):
                cells, sames, answers = [], [], {}
                for name, fn in variants.items():
                    measure(fn, str(org.pk), person.pk, queries[:5])  # warm the cache
                    timings, answers[name] = measure(fn, str(org.pk), person.pk, queries)
                    p50[(name, kind, size)] = percentile(timings, 0.5)
                    cells.append(f"{ms(percentile(timings, 0.5)):>17} {ms(percentile(timings, 0.95)):>17}")
                for name in names[1:]:
                    same = sum(1 for a, b in zip(answers["shipped"], answers[name], strict=True) if a == b)
                    sames.append(f"{same:>12}/{len(queries):<4}")
                print(f"{size:>9} {kind:>7} " + " ".join(cells) + "  " + " ".join(sames))
    finally:
        if args.proposed:
            with connection.cursor() as cursor:
                cursor.execute(DROP_TRIGGER)
        if not args.keep:
            cleanup(org)
    if len(sizes) > 1:
        first, last = sizes[0], sizes[-1]
        for kind in ("a b", "a or b"):
            for name in names:
                ratio = p50[(name, kind, last)] / p50[(name, kind, first)]
                print(f"{name:>13} {kind!r:>9}: {last} vs {first} messages {ratio:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
