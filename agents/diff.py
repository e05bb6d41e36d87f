"""A readable diff between two specs, by field path.

Paths read like the spec: `instructions`, `model_settings.temperature`, `capabilities[clock].config.timezone`,
`subagents[researcher].description`, `collection_ids`. Lists of bindings are matched by id (sub-agents by
name), so reordering is not a change and a new binding is one entry. Long text fields also get a unified diff.
"""

from __future__ import annotations

import difflib
from typing import Any

# Lists whose items are matched by a key instead of by position.
KEYED_LISTS: dict[str, str] = {"capabilities": "id", "subagents": "name", "external_agents": "name"}
LONG_TEXT_CHARS = 120
_MISSING: Any = object()


def format_path(loc: tuple | list, data: Any = None) -> str:
    """A pydantic error location as a spec path, using item keys where the data has them."""
    out = ""
    node = data
    parent_key: str | None = None
    for part in loc:
        if isinstance(part, int):
            key_name = KEYED_LISTS.get(parent_key or "")
            item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            if key_name and isinstance(item, dict) and isinstance(item.get(key_name), str) and item[key_name]:
                out += f"[{item[key_name]}]"
            else:
                out += f"[{part}]"
            node = item
        else:
            out += f".{part}" if out else str(part)
            node = node.get(part) if isinstance(node, dict) else None
            parent_key = str(part)
    return out


def _is_long_text(value: Any) -> bool:
    return isinstance(value, str) and ("\n" in value or len(value) > LONG_TEXT_CHARS)


def _keyed(items: list, key: str) -> dict[str, Any] | None:
    """{key: item} when every item has a distinct key, else None (then the list is compared whole)."""
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get(key), str) or item[key] in out:
            return None
        out[item[key]] = item
    return out


def _walk(path: str, before: Any, after: Any, changes: list[dict]) -> None:
    if before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in list(before) + [k for k in after if k not in before]:
            child = f"{path}.{key}" if path else str(key)
            _walk(child, before.get(key, _MISSING), after.get(key, _MISSING), changes)
        return
    leaf = path.rsplit(".", 1)[-1]
    key_name = KEYED_LISTS.get(leaf)
    if key_name and isinstance(before, list) and isinstance(after, list):
        old, new = _keyed(before, key_name), _keyed(after, key_name)
        if old is not None and new is not None:
            for key in list(old) + [k for k in new if k not in old]:
                _walk(f"{path}[{key}]", old.get(key, _MISSING), new.get(key, _MISSING), changes)
            return
    changes.append(
        {
            "path": path,
            "before": None if before is _MISSING else before,
            "after": None if after is _MISSING else after,
        }
    )


def _lines(value: Any) -> list[str]:
    text = value if isinstance(value, str) else ""
    return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(keepends=True)]


def diff_specs(before: dict, after: dict, *, from_label: str = "before", to_label: str = "after") -> dict:
    """{"changes": [{path, before, after}], "text_diffs": [{path, diff}], "changed_paths": [...]}"""
    changes: list[dict] = []
    _walk("", before or {}, after or {}, changes)
    text_diffs = []
    for change in changes:
        if _is_long_text(change["before"]) or _is_long_text(change["after"]):
            lines = difflib.unified_diff(
                _lines(change["before"]),
                _lines(change["after"]),
                fromfile=f"{from_label}:{change['path']}",
                tofile=f"{to_label}:{change['path']}",
            )
            text_diffs.append({"path": change["path"], "diff": "".join(lines)})
    return {"changes": changes, "text_diffs": text_diffs, "changed_paths": [c["path"] for c in changes]}
