"""What a refused request must leave alone: every row of the tables an API request could touch, as data.

`database_state()` before and after a request; equal means nothing was written (no row added, removed or
changed, no audit row, no grant). Tests also check that an *accepted* write changes it, so a snapshot that
misses the table a route writes cannot pass silently.

Each table's state is its row count and the md5 of all its rows, every column, as PostgreSQL prints them in
primary-key order — one query for all the tables. Any added, removed or changed row changes that table's pair,
as comparing the rows themselves did; reading every row into Python dicts, table by table, was most of the
role matrix's time (17 personas × 2 snapshots × 28 tables for each of ~50 routes).
"""

from __future__ import annotations

from functools import cache

from django.apps import apps
from django.db import connection

# Every table an agent route, an embed, a binding, a bot, a run or a grant writes to, plus the audit log.
TABLES = (
    "agents.Agent", "agents.AgentVersion", "agents.Environment", "agents.Run", "agents.Conversation",
    "agents.Message", "embeds.Embed", "channelbots.ChannelBot", "channelbots.Binding", "channelbots.BotCredential",
    "channelbots.ChannelIdentity", "channelbots.LinkRequest", "governance.Approval", "governance.Question",
    "guardian.UserObjectPermission", "agenticos.AuditEvent", "agenticos.Organization", "agenticos.Membership",
    "knowledge.MemoryNote", "triggers.Trigger", "triggers.TriggerSecret", "triggers.TriggerFiring",
)


@cache
def _state_query(tables: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    parts = []
    for index, label in enumerate(tables):
        meta = apps.get_model(label)._meta
        # `t::text` is the whole row (every column, not only the model's fields). Only the models' own table and
        # column names, quoted, go into the SQL; the label comes back as its index.
        pk = quote(meta.pk.column)
        parts.append(
            f"SELECT {index}, count(*), md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t.{pk}), ''))"  # noqa: S608
            f" FROM {quote(meta.db_table)} t"
        )
    return " UNION ALL ".join(parts)


def database_state(tables: tuple[str, ...] = TABLES) -> dict[str, tuple[int, str]]:
    with connection.cursor() as cursor:
        cursor.execute(_state_query(tables))
        rows = cursor.fetchall()
    return {tables[index]: (count, digest) for index, count, digest in rows}


def changed_tables(before: dict, after: dict) -> list[str]:
    return [label for label in before if before[label] != after[label]]
