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


@dataclass(frozen=True)
class ConversationHit:
    conversation_id: str
    title: str
    last_active_at: Any
    matched_turns: int
    passage: str


def _shared_ids(organization_id: str, user_id: int) -> list[str]:
    from django.contrib.contenttypes.models import ContentType
    from guardian.models import UserObjectPermission

    content_type = ContentType.objects.get_for_model(Conversation)
    ids = UserObjectPermission.objects.filter(
        user_id=user_id, content_type=content_type, permission__codename="view_conversation"
    ).values_list("object_pk", flat=True)
    valid = []
    for raw in ids:
        try:
            valid.append(uuid.UUID(str(raw)))
        except ValueError:
            continue
    return [str(pk) for pk in Conversation.objects.filter(organization_id=organization_id, pk__in=valid)
            .exclude(surface="schedule").values_list("pk", flat=True)]


def _channel_ids(organization_id: str, user_id: int) -> list[str]:
    path = getattr(settings, "CHANNEL_MEMBERSHIP_CHECK", "")
    if not path:
        return []
    still_member = import_string(path)
    candidates = Conversation.objects.filter(
        organization_id=organization_id, surface__in=CHANNEL_SURFACES, messages__author_id=user_id
    ).distinct()
    return [str(c.pk) for c in candidates if still_member(c, user_id)]


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


SEARCH_SQL = """
WITH q AS (SELECT websearch_to_tsquery('simple', %(query)s) AS query),
hits AS (
    SELECT m.conversation_id, m.id, ts_rank_cd(m.search_vector, q.query) AS rank
    FROM agents_message m
    JOIN agents_conversation c ON c.id = m.conversation_id, q
    WHERE c.organization_id = %(org)s
      AND c.surface <> 'schedule'
      AND (c.owner_id = %(user)s OR c.id = ANY(%(extra)s::uuid[]))
      AND c.id <> %(exclude)s
      AND m.role IN ('user', 'assistant')
      AND m.search_vector @@ q.query
),
best AS (
    SELECT conversation_id, count(*) AS turns, max(rank) AS top, sum(rank) AS total,
           (array_agg(id ORDER BY rank DESC, id DESC))[1] AS best_id
    FROM hits GROUP BY conversation_id
    ORDER BY top DESC, total DESC
    LIMIT %(limit)s
)
SELECT b.conversation_id, c.title, c.last_active_at, b.turns,
       ts_headline('simple', m.content, q.query,
                   'StartSel=**, StopSel=**, MaxWords=40, MinWords=15, MaxFragments=2, FragmentDelimiter=" … "')
FROM best b
JOIN agents_conversation c ON c.id = b.conversation_id
JOIN agents_message m ON m.id = b.best_id, q
ORDER BY b.top DESC, b.total DESC
"""


def search(organization_id: str, user_id: int, query: str, *, limit: int = 5,
           exclude_conversation_id: str | None = None) -> list[ConversationHit]:
    params: dict[str, Any] = {
        "query": query,
        "org": str(organization_id),
        "user": user_id,
        "extra": corpus_ids(organization_id, user_id),
        "exclude": exclude_conversation_id or "00000000-0000-0000-0000-000000000000",
        "limit": max(1, min(limit, MAX_RESULTS)),
    }
    with connection.cursor() as cursor:
        cursor.execute(SEARCH_SQL, params)
        rows = cursor.fetchall()
    return [ConversationHit(str(r[0]), r[1] or "Untitled conversation", r[2], int(r[3]), r[4]) for r in rows]


def render_hits(hits: list[ConversationHit], query: str) -> str:
    if not hits:
        return (f"No past conversation matches {query!r}. Words match whole and unstemmed: try another form "
                "of the word (meeting / meetings) or fewer words.")
    lines = [f"{len(hits)} conversation(s) match {query!r}, best first:"]
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
