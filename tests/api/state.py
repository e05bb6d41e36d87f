"""What a refused request must leave alone: every row of the tables an API request could touch, as data.

`database_state()` before and after a request; equal means nothing was written (no row added, removed or
changed, no audit row, no grant). Tests also check that an *accepted* write changes it, so a snapshot that
misses the table a route writes cannot pass silently.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps

# Every table an agent route, an embed, a binding, a bot, a run or a grant writes to, plus the audit log.
TABLES = (
    "agents.Agent", "agents.AgentVersion", "agents.Environment", "agents.Run", "agents.Conversation",
    "agents.Message", "embeds.Embed", "channelbots.ChannelBot", "channelbots.Binding", "channelbots.BotCredential",
    "channelbots.ChannelIdentity", "channelbots.LinkRequest", "governance.Approval", "governance.Question",
    "guardian.UserObjectPermission", "agenticos.AuditEvent", "agenticos.Organization", "agenticos.Membership",
    "knowledge.MemoryNote", "triggers.Trigger", "triggers.TriggerSecret", "triggers.TriggerFiring",
)


def database_state(tables: tuple[str, ...] = TABLES) -> dict[str, list[dict[str, Any]]]:
    state = {}
    for label in tables:
        model = apps.get_model(label)
        state[label] = list(model.objects.order_by("pk").values())
    return state


def changed_tables(before: dict, after: dict) -> list[str]:
    return [label for label in before if before[label] != after[label]]
