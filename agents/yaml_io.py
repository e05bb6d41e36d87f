"""YAML export/import of an agent spec.

The document is small and explicit:

    kind: agent
    format: 1
    slug: getting-started
    visibility: organization
    version: 3            # informational: which version was exported (absent for a draft)
    spec: {...}           # AgentSpec, references by id, never secret values

Parsing refuses unknown fields at every level (AgentSpec forbids extras). Reference checks (model
profile, secrets, collections…) belong to the services, which know the organization.
"""

from __future__ import annotations

from typing import Any

import yaml

from agenticos.errors import Invalid

FORMAT = 1
TOP_LEVEL_FIELDS = ("kind", "format", "slug", "visibility", "version", "spec")
MAX_YAML_CHARS = 1_000_000


class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Long instructions read as a block, not as one escaped line.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_agent_yaml(*, slug: str, visibility: str, spec: dict[str, Any], version: int | None = None) -> str:
    doc: dict[str, Any] = {"kind": "agent", "format": FORMAT, "slug": slug, "visibility": visibility}
    if version is not None:
        doc["version"] = version
    doc["spec"] = spec
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def parse_agent_yaml(text: str) -> dict[str, Any]:
    """The document as a dict with a dict `spec`. Raises Invalid naming every unknown or bad top-level field."""
    if not isinstance(text, str) or not text.strip():
        raise Invalid("The YAML document is empty.", details={"problems": [{"field": "", "message": "Empty document."}]})
    if len(text) > MAX_YAML_CHARS:
        raise Invalid("The YAML document is too large.", details={"problems": [{"field": "", "message": "Too large."}]})
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise Invalid(
            f"The YAML document cannot be parsed{where}.",
            details={"problems": [{"field": "", "message": f"YAML syntax error{where}."}]},
        ) from None
    if not isinstance(doc, dict):
        raise Invalid("The YAML document must be a mapping.", details={"problems": [{"field": "", "message": "Not a mapping."}]})
    problems = [
        {"field": str(key), "message": "Unknown field."} for key in doc if key not in TOP_LEVEL_FIELDS
    ]
    if doc.get("kind", "agent") != "agent":
        problems.append({"field": "kind", "message": "Must be 'agent'."})
    if doc.get("format", FORMAT) != FORMAT:
        problems.append({"field": "format", "message": f"Unsupported format (this server reads {FORMAT})."})
    if not isinstance(doc.get("spec"), dict):
        problems.append({"field": "spec", "message": "A mapping with the agent spec is required."})
    for key in ("slug", "visibility"):
        if key in doc and not isinstance(doc[key], str):
            problems.append({"field": key, "message": "Must be a string."})
    if problems:
        raise Invalid("The YAML document is invalid.", details={"problems": problems})
    return doc
