"""Publish checks of delegation that need the publisher or the whole spec (the config alone is checked by
the capability's `publish_check`): called from `capabilities.spec_checks.reference_problems`.

- each named delegate must be one the publisher may run (`agents:run` and at least use access on that
  agent's row): delegating is running it on their authority;
- a spec naming delegates must have delegation bound and enabled — a delegate nothing will ever call is a
  line of configuration that reads like a decision and does nothing;
- `share_with_delegates` may lend only what this agent is bound to itself, and never delegation.

A delegate of another organization never gets here: the caller refuses it as "no published agent in this
organization", the same words as one that does not exist.
"""

from __future__ import annotations

from typing import Any


def delegate_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    from agents.models import Agent
    from capabilities.remote_agents.publish import external_agent_problems
    from governance.grants import USE, agent_access, at_least

    problems: list[dict[str, str]] = external_agent_problems(actor, data, format_path)
    subs = [s for s in (data.get("subagents") or []) if isinstance(s, dict) and s.get("agent_id")]
    bindings = [b for b in (data.get("capabilities") or []) if isinstance(b, dict)]
    delegation = next((b for b in bindings if b.get("id") == "subagents"), None)
    if subs and (delegation is None or delegation.get("enabled") is False):
        problems.append({"field": "subagents", "message": "Sub-agents are named but delegation (subagents) is "
                         "not enabled, so nothing would ever call them: enable it or remove them."})
    if subs:
        ids = []
        for sub in subs:
            try:
                import uuid

                ids.append(uuid.UUID(str(sub["agent_id"])))
            except ValueError:
                continue
        rows = {str(a.pk): a for a in Agent.objects.filter(organization=actor.organization, pk__in=ids)}
        can_run = actor.has("agents:run")
        for index, sub in enumerate(data.get("subagents") or []):
            if not isinstance(sub, dict) or not sub.get("agent_id"):
                continue
            row = rows.get(str(sub["agent_id"]))
            if row is None:
                continue  # refused by the caller as not found
            level = agent_access(actor, row)
            if not can_run or level is None or not at_least(level, USE):
                problems.append({"field": f"{format_path(('subagents', index), data)}.agent_id",
                                 "message": "You cannot run this agent, so you cannot make it a delegate."})
    if delegation is not None:
        config = delegation.get("config") or {}
        shared = config.get("share_with_delegates") or []
        bound = {b.get("id") for b in bindings if b.get("enabled", True)}
        index = (data.get("capabilities") or []).index(delegation)
        for i, cap_id in enumerate(shared if isinstance(shared, list) else []):
            if cap_id != "subagents" and cap_id not in bound:
                path = f"{format_path(('capabilities', index), data)}.config.share_with_delegates[{i}]"
                problems.append({"field": path, "message": f"This agent is not bound to {cap_id!r}, so it "
                                 "has nothing of it to lend."})
    return problems
