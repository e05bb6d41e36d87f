"""Config forms drawn from a capability's JSON Schema (the catalog's `config_schema`), and the way back.

Each property becomes one labelled control: an enum is a select with the schema's `x-enum-labels`, a number
keeps its range (minimum/maximum) and shows its default, a boolean is a checkbox, anything structured is a
JSON text area. Limits, cache lifetimes and prompts go under "Advanced settings", which opens by itself
where one of them is set (or `x-advanced` says so).
"""

from __future__ import annotations

import json
import re
from typing import Any

ADVANCED_NAME = re.compile(r"(max|min|limit|threshold|timeout|ttl|cache|prompt|chars|retries|window|memory)", re.I)
UNSET = ""


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


def fields_for(schema: dict[str, Any], config: dict[str, Any], *, prefix: str, errors: dict[str, str]
               ) -> list[dict[str, Any]]:
    """One dict per property, ready for the template. `errors` is keyed by property name."""
    fields = []
    for name, raw in (schema.get("properties") or {}).items():
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
        fields.append(field)
    return fields


def config_from_post(schema: dict[str, Any], post: Any) -> dict[str, Any]:
    """The submitted config: empty inputs are left out (the default applies); a value that does not parse is
    kept as typed so the publish check names it at its field."""
    config: dict[str, Any] = {}
    for name, raw in (schema.get("properties") or {}).items():
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
