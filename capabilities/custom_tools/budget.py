"""The 25-slot budget per agent: custom tool 1, database connection read 2 / write 5 / full 7.

Checked when tools are assigned (an agent's spec is saved or published: `check_spec`) and when a database
connection's permission changes (`check_permission_change`). The catalog itself is unbounded.
"""

from __future__ import annotations

import uuid
from typing import Any

from agenticos.errors import Invalid

MAX_SLOTS = 25
CONNECTION_SLOTS = {"read": 2, "write": 5, "full": 7}


def _binding_config(spec: dict[str, Any], capability_id: str) -> dict[str, Any]:
    for binding in spec.get("capabilities") or []:
        if isinstance(binding, dict) and binding.get("id") == capability_id and binding.get("enabled", True):
            return binding.get("config") or {}
    return {}


def _uuids(values: Any) -> set[uuid.UUID]:
    out = set()
    for value in values or []:
        try:
            out.add(uuid.UUID(str(value)))
        except ValueError:
            continue
    return out


def custom_tool_ids(spec: dict[str, Any]) -> set[uuid.UUID]:
    return _uuids(spec.get("custom_tool_ids")) | _uuids(_binding_config(spec, "custom_tools").get("tool_ids"))


def connection_ids(spec: dict[str, Any]) -> set[uuid.UUID]:
    return _uuids(_binding_config(spec, "database").get("connection_ids"))


def slots(spec: dict[str, Any], organization_id: Any, *, overrides: dict[uuid.UUID, str] | None = None) -> dict:
    """{"total", "custom_tools", "connections": {name: slots}} for one spec (foreign ids count nothing)."""
    from capabilities.models import DatabaseConnection

    overrides = overrides or {}
    tools = len(custom_tool_ids(spec))
    conns: dict[str, int] = {}
    ids = connection_ids(spec)
    if ids:
        for pk, name, permission in DatabaseConnection.objects.filter(
            organization_id=organization_id, pk__in=ids
        ).values_list("pk", "name", "permission"):
            conns[name] = CONNECTION_SLOTS[overrides.get(pk, permission)]
    return {"total": tools + sum(conns.values()), "custom_tools": tools, "connections": conns}


def _message(usage: dict, who: str) -> str:
    parts = [f"{usage['custom_tools']} custom tool(s) × 1"]
    parts += [f"database {name} × {n}" for name, n in usage["connections"].items()]
    return (f"{who} would use {usage['total']} of {MAX_SLOTS} tool slots ({', '.join(parts)}). "
            f"Remove a tool or lower a database permission to stay within {MAX_SLOTS}.")


def check_spec(spec: dict[str, Any], organization_id: Any, *, who: str = "This agent") -> dict:
    usage = slots(spec, organization_id)
    if usage["total"] > MAX_SLOTS:
        raise Invalid(_message(usage, who), code="tool_slots_exceeded",
                      details={"slots": usage["total"], "max": MAX_SLOTS})
    return usage


def check_permission_change(connection: Any, new_permission: str) -> None:
    """Refuse a permission change that would push any agent (draft) using the connection past 25."""
    from agents.models import Agent

    for agent in Agent.objects.filter(organization_id=connection.organization_id).only("name", "draft_spec"):
        spec = agent.draft_spec or {}
        if connection.pk not in connection_ids(spec):
            continue
        usage = slots(spec, connection.organization_id, overrides={connection.pk: new_permission})
        if usage["total"] > MAX_SLOTS:
            raise Invalid(_message(usage, f"Agent {agent.name!r}"), code="tool_slots_exceeded",
                          details={"agent_id": str(agent.pk), "slots": usage["total"], "max": MAX_SLOTS})


def slot_problems(spec: Any, organization_id: Any) -> list[dict[str, str]]:
    """For the agent save / publish checks: [] or one problem naming the total (field `custom_tool_ids`)."""
    if not isinstance(spec, dict):
        return []
    usage = slots(spec, organization_id)
    if usage["total"] <= MAX_SLOTS:
        return []
    return [{"field": "custom_tool_ids", "message": _message(usage, "This agent")}]
