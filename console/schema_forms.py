"""Config forms drawn from a capability's JSON Schema (the catalog's `config_schema`), and the way back.

Each property becomes one labelled control: an enum is a select with the schema's `x-enum-labels`, a number
keeps its range (minimum/maximum) and shows its default, a boolean is a checkbox, anything structured is a
JSON text area. Limits, cache lifetimes and prompts go under "Advanced settings", which opens by itself
where one of them is set (or `x-advanced` says so).

Some properties hold ids of the organization's own objects. Given `organization_id`, those become pickers
instead of a JSON box: the custom tools an agent may call (each with its approval, folding `tool_approval`
in), the database connections it may use (with their permission and slot cost), the MCP servers with the
tools allowed from each and each tool's approval, and the runtimes the sandbox connection reports. A picker posts a `<input>.picker` marker, so unticking
everything saves an empty choice rather than leaving the old one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext as _

ADVANCED_NAME = re.compile(r"(max|min|limit|threshold|timeout|ttl|cache|prompt|chars|retries|window|memory)", re.I)
UNSET = ""
APPROVALS = ("default", "required", "never")
PICKER_MARK = ".picker"


def _branch(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The non-null branch of an `anyOf: [X, null]` and whether null is allowed."""
    options = schema.get("anyOf") or schema.get("oneOf")
    if not options:
        return schema, False
    non_null = [o for o in options if o.get("type") != "null"]
    nullable = len(non_null) != len(options)
    merged = {**(non_null[0] if non_null else {}), **{k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}}
    return merged, nullable


def _kind(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "select"
    kind = schema.get("type")
    if kind == "boolean":
        return "checkbox"
    if kind in ("integer", "number"):
        return "number"
    if kind == "string":
        return "textarea" if schema.get("maxLength", 0) > 300 or "prompt" in schema.get("title", "").lower() else "text"
    return "json"


# ------------------------------------------------------------------ pickers of the organization's objects


def _approval(value: Any) -> str:
    return value if value in APPROVALS else "default"


def _tool_picker(organization_id: Any, config: dict[str, Any]) -> dict[str, Any]:
    from capabilities.models import CustomTool
    from console.tools import group_of

    chosen = {str(v) for v in config.get("tool_ids") or []}
    approvals = config.get("tool_approval") or {}
    tools = sorted(CustomTool.objects.filter(organization_id=organization_id).only(
        "pk", "name", "alias", "method", "url", "tags", "kit_name", "template_key", "warnings"),
        key=lambda t: (group_of(t).lower(), t.name.lower()))
    return {"kind": "tool_picker", "choices": [
        {"value": str(t.pk), "label": t.name, "alias": t.alias, "detail": f"{t.method} {t.url}", "group": group_of(t),
         "checked": str(t.pk) in chosen, "approval": _approval(approvals.get(t.alias)),
         "warnings": [w.get("level") for w in t.warnings or [] if isinstance(w, dict)]} for t in tools],
        "approvals": APPROVALS, "folds": ["tool_approval"]}


def _database_picker(organization_id: Any, config: dict[str, Any]) -> dict[str, Any]:
    from capabilities.custom_tools.budget import CONNECTION_SLOTS
    from capabilities.models import DatabaseConnection

    chosen = {str(v) for v in config.get("connection_ids") or []}
    rows = DatabaseConnection.objects.filter(organization_id=organization_id).only("pk", "name", "permission")
    return {"kind": "connection_picker", "choices": [
        {"value": str(c.pk), "label": c.name, "detail": c.permission, "slots": CONNECTION_SLOTS.get(c.permission, 0),
         "checked": str(c.pk) in chosen} for c in rows.order_by("name")]}


def _mcp_picker(organization_id: Any, config: dict[str, Any]) -> dict[str, Any]:
    from capabilities.models import McpConnection

    bound = {str(e.get("connection_id")): e for e in config.get("connections") or [] if isinstance(e, dict)}
    servers = []
    for conn in McpConnection.objects.filter(organization_id=organization_id).only("pk", "name", "tools") \
            .order_by("name"):
        entry = bound.get(str(conn.pk))
        allowed = entry.get("allowed_tools") if entry else None
        approvals = (entry or {}).get("tool_approval") or {}
        tools = [{"name": t.get("name", ""), "prefixed": f"{conn.name}_{t.get('name', '')}",
                  "description": (t.get("description") or "")[:160],
                  "allowed": allowed is None or t.get("name") in allowed,
                  "approval": _approval(approvals.get(f"{conn.name}_{t.get('name', '')}"))}
                 for t in conn.tools or [] if isinstance(t, dict)]
        servers.append({"value": str(conn.pk), "label": conn.name, "checked": entry is not None,
                        "all_tools": allowed is None, "tools": tools})
    return {"kind": "mcp_picker", "choices": servers, "approvals": APPROVALS}


RUNTIME_READ_TIMEOUT = 5.0  # the Builder page waits for it; a slow service gets the note, not a hung page


def _offered_runtimes(organization_id: Any, config: dict[str, Any]) -> tuple[list[dict[str, str]], str]:
    """(the runtimes the binding's connection reports now, a note when they could not be read)."""
    from agenticos.models import Organization
    from workspaces import connections
    from workspaces.client import SandboxdError

    try:
        connection = connections.for_run(Organization.objects.get(pk=organization_id), config.get("connection_id"))
        return connections.client_for(connection).runtimes_sync(timeout=RUNTIME_READ_TIMEOUT), ""
    except (connections.ConnectionUnavailable, SandboxdError) as exc:
        return [], f"The sandbox service's runtimes could not be read ({exc}); only its default is offered."


def _runtime_picker(organization_id: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The runtimes the sandbox connection reports now (read live: a stored list would offer one the service
    has stopped allowing). A current value it no longer offers stays, selected and marked; when the service
    cannot be read only its default is offered, with the reason."""
    current = config.get("runtime") or ""
    offered: list[dict[str, str]] = []
    if config.get("backend") != "service":
        # Stored files have no runtime. Reading here would register the deployment's sandbox and ask it on
        # every Builder page of every agent, bound or not.
        note = "Choose the sandbox service as the backend and save to see the runtimes its connection offers."
    else:
        offered, note = _offered_runtimes(organization_id, config)
    options = [{"value": "", "label": "The service's default", "selected": not current}]
    aliases = set()
    for runtime in offered:
        alias = str(runtime.get("alias") or "")
        if not alias or alias in aliases:
            continue
        aliases.add(alias)
        description = str(runtime.get("description") or "")
        options.append({"value": alias, "label": f"{alias} — {description}" if description else alias,
                        "selected": alias == current})
    if current and current not in aliases:
        options.append({"value": current, "label": f"{current} (not offered by the service now)", "selected": True})
    help_text = "Only for service: the runtimes the sandbox connection offers, read from it now."
    return {"kind": "select", "options": options, "nullable": False,
            "help": f"{help_text} {note}".strip(), "note": note}


# (capability id, property) → the picker that replaces its JSON box.
PICKERS: dict[tuple[str, str], Callable[[Any, dict[str, Any]], dict[str, Any]]] = {
    ("custom_tools", "tool_ids"): _tool_picker,
    ("database", "connection_ids"): _database_picker,
    ("mcp", "connections"): _mcp_picker,
    ("sandbox", "runtime"): _runtime_picker,
}


def _pickers(prefix: str, organization_id: Any, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    if organization_id is None:
        return {}
    capability_id = prefix.removeprefix("cap-")
    return {name: picker(organization_id, config) for (cap, name), picker in PICKERS.items() if cap == capability_id}


# ------------------------------------------------------------------ the form


def fields_for(schema: dict[str, Any], config: dict[str, Any], *, prefix: str, errors: dict[str, str],
               organization_id: Any = None) -> list[dict[str, Any]]:
    """One dict per property, ready for the template. `errors` is keyed by property name. With
    `organization_id`, properties that hold ids of the organization's objects are pickers."""
    pickers = _pickers(prefix, organization_id, config)
    folded = {name for picker in pickers.values() for name in picker.get("folds", [])}
    fields = []
    for name, raw in (schema.get("properties") or {}).items():
        if name in folded:
            continue
        if name in pickers:
            picker = pickers[name]
            fields.append({"name": name, "input_name": f"config.{name}", "id": f"{prefix}-{name}",
                           "label": raw.get("title") or name.replace("_", " ").capitalize(),
                           "help": raw.get("description", ""), "has_default": False, "nullable": True,
                           "advanced": False, "is_set": name in config, "min": "", "max": "",
                           "error": errors.get(name) or next((errors[f] for f in picker.get("folds", [])
                                                              if f in errors), ""),
                           **picker})
            continue
        prop, nullable = _branch(raw)
        kind = _kind(prop)
        is_set = name in config and config[name] is not None
        value = config.get(name) if is_set else None
        default = prop.get("default")
        field: dict[str, Any] = {
            "name": name,
            "input_name": f"config.{name}",
            "id": f"{prefix}-{name}",
            "label": prop.get("title") or name.replace("_", " ").capitalize(),
            "help": prop.get("description", ""),
            "kind": kind,
            "default": "" if default is None else (json.dumps(default) if kind == "json" else str(default)),
            "has_default": default is not None,
            "nullable": nullable or default is None,
            "advanced": bool(prop.get("x-advanced", ADVANCED_NAME.search(name) is not None)),
            "is_set": is_set,
            "error": errors.get(name, ""),
        }
        if kind == "select":
            labels = prop.get("x-enum-labels") or {}
            current = value if is_set else default
            field["options"] = [
                {"value": str(v), "label": labels.get(str(v), str(v)), "selected": current == v}
                for v in prop["enum"]
            ]
        elif kind == "number":
            field["min"] = prop.get("minimum", prop.get("exclusiveMinimum", ""))
            field["max"] = prop.get("maximum", prop.get("exclusiveMaximum", ""))
            field["step"] = "1" if prop.get("type") == "integer" else "any"
            field["value"] = "" if value is None else str(value)
        elif kind == "checkbox":
            field["checked"] = bool(value) if is_set else bool(default)
        elif kind == "json":
            field["value"] = "" if value is None else json.dumps(value, indent=2)
        else:
            field["value"] = "" if value is None else str(value)
        field["default_text"] = _default_text(field, default)
        fields.append(field)
    return fields


def _default_text(field: dict[str, Any], default: Any) -> str:
    """The default as a person reads it in the help: a select's label (not its value), a checkbox's "on"/"off"
    (not Python's True/False), else the value itself."""
    if default is None:
        return ""
    if field["kind"] == "checkbox":
        return str(_("on") if default else _("off"))
    if field["kind"] == "select":
        return next((o["label"] for o in field["options"] if o["value"] == str(default)), str(default))
    return field["default"]


def config_from_post(schema: dict[str, Any], post: Any) -> dict[str, Any]:
    """The submitted config: empty inputs are left out (the default applies); a value that does not parse is
    kept as typed so the publish check names it at its field."""
    config: dict[str, Any] = {}
    for name, raw in (schema.get("properties") or {}).items():
        if f"config.{name}{PICKER_MARK}" in post:
            config[name] = _picked(name, post)
            continue
        prop, _nullable = _branch(raw)
        kind = _kind(prop)
        key = f"config.{name}"
        if kind == "checkbox":
            checked = post.get(key) == "on"
            if checked != bool(prop.get("default", False)):
                config[name] = checked
            continue
        text = (post.get(key) or "").strip()
        if text == UNSET:
            continue
        if kind == "number":
            try:
                number = float(text)
                config[name] = int(number) if prop.get("type") == "integer" and number.is_integer() else number
            except ValueError:
                config[name] = text
        elif kind == "select":
            enum = prop.get("enum") or []
            config[name] = next((v for v in enum if str(v) == text), text)
        elif kind == "json":
            try:
                config[name] = json.loads(text)
            except ValueError:
                config[name] = text
        else:
            config[name] = text
    return config


def _picked(name: str, post: Any) -> Any:
    """What a picker posted: ticked ids (a list), per-tool approvals (a dict), or MCP server entries."""
    key = f"config.{name}"
    values = post.getlist(key) if hasattr(post, "getlist") else [post.get(key)] if post.get(key) else []
    if name == "tool_approval":
        return {k[len(key) + 1:]: v for k, v in post.items()
                if k.startswith(key + ".") and k != key + PICKER_MARK and v in APPROVALS and v != "default"}
    if name == "connections":
        entries = []
        for conn_id in values:
            base = f"{key}.{conn_id}"
            allowed = None if post.get(f"{base}.all") == "on" else post.getlist(f"{base}.allowed")
            approvals = {k[len(base) + len(".approval."):]: v for k, v in post.items()
                         if k.startswith(f"{base}.approval.") and v in APPROVALS and v != "default"}
            entries.append({"connection_id": conn_id, "allowed_tools": allowed, "tool_approval": approvals})
        return entries
    return list(dict.fromkeys(values))
