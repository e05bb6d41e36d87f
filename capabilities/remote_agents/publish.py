"""Publish checks of `external_agents` (called from capabilities.subagents.publish.delegate_problems)."""

from __future__ import annotations

import uuid
from typing import Any


def external_agent_problems(actor: Any, data: dict[str, Any], format_path: Any) -> list[dict[str, str]]:
    from capabilities.remote_agents.models import RemoteAgent

    entries = [e for e in (data.get("external_agents") or []) if isinstance(e, dict)]
    if not entries:
        return []
    problems: list[dict[str, str]] = []
    bindings = [b for b in (data.get("capabilities") or []) if isinstance(b, dict)]
    delegation = next((b for b in bindings if b.get("id") == "subagents"), None)
    if delegation is None or delegation.get("enabled") is False:
        problems.append({"field": "external_agents", "message": "Remote agents are named but delegation "
                         "(subagents) is not enabled, so nothing would ever call them: enable it or remove them."})
    ids = []
    for entry in entries:
        try:
            ids.append(uuid.UUID(str(entry.get("remote_agent_id"))))
        except ValueError:
            continue
    rows = {str(r.pk): r for r in RemoteAgent.objects.filter(organization=actor.organization, pk__in=ids)}
    # The model names a delegate by its name alone, so a name two delegates share would reach one of them.
    taken = {s.get("name"): "A sub-agent" for s in (data.get("subagents") or []) if isinstance(s, dict)}
    inline = ((delegation or {}).get("config") or {}).get("inline") or []
    taken.update({s.get("name"): "An inline specialist" for s in inline if isinstance(s, dict)})
    for index, entry in enumerate(data.get("external_agents") or []):
        if not isinstance(entry, dict):
            continue
        path = format_path(("external_agents", index), data)
        row = rows.get(str(entry.get("remote_agent_id")))
        if row is None:
            # Another organization's registration reads the same as one that does not exist.
            problems.append({"field": f"{path}.remote_agent_id",
                             "message": f"No remote agent {entry.get('remote_agent_id')} in this organization."})
        elif row.secret_id is not None and not actor.has("secrets:view"):
            # The registration's key is lent to every run, as a capability's is.
            problems.append({"field": f"{path}.remote_agent_id", "message": "This remote agent sends a key from "
                             "the vault, and your role cannot use secrets."})
        name = entry.get("name")
        if name in taken:
            problems.append({"field": f"{path}.name", "message": f"{taken[name]} already has the name {name!r}: "
                             "the model names a delegate by its name, so each needs its own."})
        elif isinstance(name, str):
            taken[name] = "Another remote agent"
    return problems
