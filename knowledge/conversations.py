"""Search over one person's past conversations: PostgreSQL full-text search, nothing else.

`agents_message.search_vector` is maintained by a database trigger with the `simple` configuration (no
stemming: "meeting" does not find "meetings"), indexed with GIN (`message_search_gin`). A query goes
through `websearch_to_tsquery('simple', …)` ("quoted phrases", `or`, a leading `-`), hits are ordered by
`ts_rank_cd`, and the best passage comes from `ts_headline` with matches in **bold**.

The corpus is one person's: conversations they own, conversations shared with them (a guardian
`view_conversation` grant) and channel threads they took part in and are still a member of — membership
confirmed against the chat platform through `CHANNEL_MEMBERSHIP_CHECK` (a dotted path to a callable
`(conversation, user_id) -> bool`; without one, no channel thread is confirmed, so none is searched).
Trigger run logs (surface "schedule") are never part of it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

from agents.models import Conversation, Message

CHANNEL_SURFACES = ("slack", "telegram", "mattermost")
WINDOW_TURNS = 20
MAX_RESULTS = 20
# At most this many matching messages (the newest) choose the conversations a search returns.
RANK_WINDOW = 200


@dataclass(frozen=True)
class ConversationHit:
    conversation_id: str
    title: str
    last_active_at: Any
    matched_turns: int
    passage: str


SHARED_SQL = """
SELECT c.id FROM agents_conversation c
WHERE c.organization_id = %(org)s AND c.surface <> 'schedule'
  AND c.id::text IN (SELECT p.object_pk FROM guardian_userobjectpermission p
                     JOIN auth_permission a ON a.id = p.permission_id
                     WHERE p.user_id = %(user)s AND p.content_type_id = %(type)s
                       AND a.codename = 'view_conversation' AND a.content_type_id = %(type)s)
"""
# Channel threads the person wrote in (ownerless or someone else's): as the author of a turn, or through one
# of their chat accounts linked in this organization (a turn written before the account was linked, or by an
# account whose turns the binding creator's authority answered, has the account and no author). Membership is
# confirmed in Python. The surfaces are CHANNEL_SURFACES, spelled as the partial index conv_channel_threads
# (agents 0005) has them.
CHANNEL_SQL = """
SELECT c.id FROM agents_conversation c
WHERE c.organization_id = %(org)s AND c.surface IN ('slack', 'telegram', 'mattermost')
  AND EXISTS (SELECT 1 FROM agents_message m WHERE m.conversation_id = c.id
              AND (m.author_id = %(user)s
                   OR m.chat_identity_id IN (SELECT i.id FROM channelbots_channelidentity i
                                             WHERE i.user_id = %(user)s AND i.organization_id = %(org)s)))
"""


def _shared_ids(organization_id: str, user_id: int) -> list[str]:
    from django.contrib.contenttypes.models import ContentType

    content_type = ContentType.objects.get_for_model(Conversation)
    with connection.cursor() as cursor:
        cursor.execute(SHARED_SQL, {"org": str(organization_id), "user": user_id, "type": content_type.pk})
        return [str(row[0]) for row in cursor.fetchall()]


def _channel_ids(organization_id: str, user_id: int) -> list[str]:
    path = getattr(settings, "CHANNEL_MEMBERSHIP_CHECK", "")
    if not path:
        return []
    still_member = import_string(path)
    with connection.cursor() as cursor:
        cursor.execute(CHANNEL_SQL, {"org": str(organization_id), "user": user_id})
        ids = [row[0] for row in cursor.fetchall()]
    if not ids:
        return []
    return [str(c.pk) for c in Conversation.objects.filter(pk__in=ids) if still_member(c, user_id)]


def corpus_ids(organization_id: str, user_id: int) -> list[str]:
    """Conversation ids beyond the person's own that they may search (shared, confirmed channel threads)."""
    return sorted(set(_shared_ids(organization_id, user_id)) | set(_channel_ids(organization_id, user_id)))


def can_read(organization_id: str, user_id: int, conversation_id: str) -> bool:
    try:
        pk = uuid.UUID(str(conversation_id))
    except ValueError:
        return False
    own = Conversation.objects.filter(organization_id=organization_id, pk=pk, owner_id=user_id).exclude(
        surface="schedule").exists()
    return own or str(pk) in corpus_ids(organization_id, user_id)


def corpus_key(organization_id: str, user_id: int) -> str:
    """The tsquery of the corpus lexeme agents migration 0005 puts on every searchable message of the person's
    own conversations in that organization (a space inside: no query word can be or match it)."""
    return f"' p{uuid.UUID(str(organization_id))}/{int(user_id)}'"


# How the person's own matches are found (agents migration 0005): each searchable message of an owned
# conversation also carries each of its words keyed by the owner ('word <owner id>'), so the GIN index holds
# one posting list per word and person and hands back only the person's matches, whatever the table's size.
# The index probe is the query's positive part (`querytree` drops exclusions) with each word keyed and
# phrases loosened to AND: a superset. The exact query (phrases, exclusions) and the corpus lexeme (this
# organization, this owner) are then checked on each row with ts_match_vq, which the index does not take.
# A query with nothing positive (only exclusions) is probed with the corpus lexeme.
QUERY_CTE = r"""
q AS (
    SELECT w.query, CASE WHEN querytree(w.query) = 'T' THEN %(key)s::tsquery
        ELSE regexp_replace(regexp_replace(querytree(w.query), '''((?:[^'']|'''')*)''',
                                           '''\1 ' || %(uid)s::text || '''', 'g'),
                            '<(?:-|\d+)>', '&', 'g')::tsquery END AS probe
    FROM (SELECT websearch_to_tsquery('simple', %(query)s) AS query) w
)"""
# Matching messages: the person's own through their keyed words, then those of conversations shared with
# them or channel threads they are in, by conversation id (the words checked on each row).
OWN_MATCHES = """
    SELECT m.conversation_id, m.id, m.search_vector FROM agents_message m, q
    WHERE numnode(q.query) > 0 AND m.search_vector @@ q.probe
      AND ts_match_vq(m.search_vector, q.query && %(key)s::tsquery)
      AND m.conversation_id <> %(exclude)s"""
EXTRA_MATCHES = """
    UNION ALL
    SELECT m.conversation_id, m.id, m.search_vector FROM agents_message m, q
    WHERE numnode(q.query) > 0 AND m.conversation_id = ANY(%(extra)s::uuid[]) AND m.conversation_id <> %(exclude)s
      AND m.role IN ('user', 'assistant') AND m.search_vector @@ q.query
      AND NOT m.search_vector @@ %(key)s::tsquery"""

# The newest RANK_WINDOW matching messages (one more, to know whether there were more; `id + 0` so the
# planner never walks the primary key backwards hoping to meet matches early) choose the conversations;
# each chosen conversation is then ranked over all its matching turns (max, then sum of ts_rank_cd; on a
# tie the newer match first), which also gives its matched-turn count and best passage. With RANK_WINDOW
# matches or fewer this is the exact ranking of every match.
SEARCH_SQL = """
WITH {q},
matches AS (
    SELECT * FROM ({matches}
    ) u ORDER BY u.id + 0 DESC LIMIT %(window)s + 1
),
chosen AS (
    SELECT w.conversation_id
    FROM (SELECT conversation_id, id, ts_rank_cd(search_vector, q.query) AS rank
          FROM (SELECT * FROM matches ORDER BY id DESC LIMIT %(window)s) newest, q) w
    GROUP BY w.conversation_id
    ORDER BY max(w.rank) DESC, sum(w.rank) DESC, max(w.id) DESC
    LIMIT %(limit)s
),
hits AS (
    SELECT m.conversation_id, m.id, ts_rank_cd(m.search_vector, q.query) AS rank
    FROM agents_message m, q
    WHERE m.conversation_id IN (SELECT conversation_id FROM chosen)
      AND m.role IN ('user', 'assistant') AND m.search_vector @@ q.query
),
best AS (
    SELECT conversation_id, count(*) AS turns, max(rank) AS top, sum(rank) AS total, max(id) AS newest,
           (array_agg(id ORDER BY rank DESC, id DESC))[1] AS best_id
    FROM hits GROUP BY conversation_id
)
SELECT b.conversation_id, c.title, c.last_active_at, b.turns,
       ts_headline('simple', m.content, q.query,
                   'StartSel=**, StopSel=**, MaxWords=40, MinWords=15, MaxFragments=2, FragmentDelimiter=" … "'),
       (SELECT count(*) FROM matches) > %(window)s AS window_full
FROM best b
JOIN agents_conversation c ON c.id = b.conversation_id AND c.organization_id = %(org)s
JOIN agents_message m ON m.id = b.best_id, q
ORDER BY b.top DESC, b.total DESC, b.newest DESC
"""


class SearchResult(list[ConversationHit]):
    """The hits, best first; `window_full` when more than RANK_WINDOW messages matched (the newest were ranked)."""

    window_full: bool = False


def search(organization_id: str, user_id: int, query: str, *, limit: int = 5,
           exclude_conversation_id: str | None = None) -> SearchResult:
    extra = corpus_ids(organization_id, user_id)
    params: dict[str, Any] = {
        "query": query,
        "org": str(organization_id),
        "key": corpus_key(organization_id, user_id),
        "uid": int(user_id),
        "extra": extra,
        "exclude": exclude_conversation_id or "00000000-0000-0000-0000-000000000000",
        "limit": max(1, min(limit, MAX_RESULTS)),
        "window": RANK_WINDOW,
    }
    sql = SEARCH_SQL.format(q=QUERY_CTE, matches=OWN_MATCHES + (EXTRA_MATCHES if extra else ""))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    result = SearchResult(ConversationHit(str(r[0]), r[1] or "Untitled conversation", r[2], int(r[3]), r[4])
                          for r in rows)
    result.window_full = bool(rows and rows[0][5])
    return result


def render_hits(hits: list[ConversationHit], query: str) -> str:
    if not hits:
        return (f"No past conversation matches {query!r}. Words match whole and unstemmed: try another form "
                "of the word (meeting / meetings) or fewer words.")
    lines = [f"{len(hits)} conversation(s) match {query!r}, best first:"]
    if getattr(hits, "window_full", False):
        lines[0] = (f"More than {RANK_WINDOW} messages match {query!r}, so these are the best of the conversations "
                    f"with the newest {RANK_WINDOW} matches; for older ones, narrow the query (a \"quoted phrase\", "
                    "more words, or -word to exclude one). Best first:")
    for number, hit in enumerate(hits, start=1):
        when = hit.last_active_at.strftime("%Y-%m-%d %H:%M UTC") if hit.last_active_at else "unknown"
        lines += [
            "",
            f"[{number}] {hit.title} (id {hit.conversation_id})",
            f"Last active: {when}. Matched turns: {hit.matched_turns}.",
            f"Best passage: {hit.passage}",
        ]
    lines += ["", "Open one with read_conversation(conversation_id=...)."]
    return "\n".join(lines)


def read_window(organization_id: str, conversation_id: str, start: int = 1) -> str:
    conversation = Conversation.objects.get(organization_id=organization_id, pk=conversation_id)
    turns = Message.objects.filter(conversation=conversation, role__in=("user", "assistant")).order_by("id")
    total = turns.count()
    start = max(1, start)
    window = list(turns.select_related("author")[start - 1:start - 1 + WINDOW_TURNS])
    speakers = {m.author_id for m in window if m.role == "user" and m.author_id} | {
        m.author_label for m in window if m.role == "user" and not m.author_id and m.author_label}
    several = len(speakers) > 1
    title = conversation.title or "Untitled conversation"
    if not window:
        return f"# {title}\n\nThere are {total} turn(s); nothing at turn {start}."
    lines = [f"# {title}", ""]
    for message in window:
        if message.role == "assistant":
            lines.append(f"AI: {message.content}")
        else:
            author = message.author
            name = message.author_label or ((author.display_name or author.email) if author else "")
            lines.append(f"USER ({name}): {message.content}" if several and name else f"USER: {message.content}")
        lines.append("")
    end = start + len(window) - 1
    if end < total:
        lines.append(f"Turns {start}-{end} of {total}. For the next turns call read_conversation("
                     f"conversation_id=\"{conversation.pk}\", start={end + 1}).")
    else:
        lines.append(f"Turns {start}-{end} of {total}: the end of the conversation.")
    return "\n".join(lines)
