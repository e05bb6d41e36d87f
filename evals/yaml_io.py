"""YAML export/import of an evaluation suite, beside the agent's own YAML (agents.yaml_io):

    kind: eval_suite
    format: 1
    agent: getting-started      # informational: the slug it was exported from
    name: Smoke
    description: ...
    gates_publish: false
    replay_checks: [{kind: contains, value: please}]   # how a replay naming this suite judges each run
    cases:
      - name: greets
        prompt: Say hello
        history: [{role: user, content: ...}, {role: assistant, content: ...}]
        attachments: [{name: notes.txt, mime: text/plain, content: ...}]
        checks: [{kind: contains, value: hello}, {kind: tool_called, tool: create_chart, args: {chart_type: bar}}]
        approvals: {send_email: reject}
        default_approval: reject
        answers: {Plan: [Pro]}

Unknown fields are refused at every level; the cases and the replay checks are checked by evals.services like
any other (a judge check names one of the organization's chat profiles: another organization's id is refused).
An import over an existing suite replaces its cases and its replay checks (absent: none).
"""

from __future__ import annotations

from typing import Any

import yaml

from agenticos.errors import Invalid
from agents.yaml_io import MAX_YAML_CHARS, _Dumper

FORMAT = 1
TOP_LEVEL_FIELDS = ("kind", "format", "agent", "name", "description", "gates_publish", "replay_checks", "cases")


def dump_suite_yaml(*, agent_slug: str, suite: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    doc: dict[str, Any] = {"kind": "eval_suite", "format": FORMAT, "agent": agent_slug, "name": suite["name"],
                           "description": suite.get("description", ""), "gates_publish": suite.get("gates_publish", False),
                           "replay_checks": list(suite.get("replay_checks") or [])}
    doc["cases"] = [{k: v for k, v in case.items() if k != "id" and v not in (None, [], {})} for case in cases]
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _invalid(message: str, problems: list[dict[str, str]]) -> Invalid:
    return Invalid(message, details={"problems": problems})


def parse_suite_yaml(text: str) -> dict[str, Any]:
    """The suite fields and its raw cases (for evals.services to check). Raises Invalid."""
    if not isinstance(text, str) or not text.strip():
        raise _invalid("The YAML document is empty.", [{"field": "", "message": "Empty document."}])
    if len(text) > MAX_YAML_CHARS:
        raise _invalid("The YAML document is too large.", [{"field": "", "message": "Too large."}])
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise _invalid(f"The YAML document cannot be parsed{where}.",
                       [{"field": "", "message": f"YAML syntax error{where}."}]) from None
    if not isinstance(doc, dict):
        raise _invalid("The YAML document must be a mapping.", [{"field": "", "message": "Not a mapping."}])
    problems = [{"field": str(key), "message": "Unknown field."} for key in doc if key not in TOP_LEVEL_FIELDS]
    if doc.get("kind") != "eval_suite":
        problems.append({"field": "kind", "message": "Must be 'eval_suite'."})
    if doc.get("format", FORMAT) != FORMAT:
        problems.append({"field": "format", "message": f"Unsupported format (this server reads {FORMAT})."})
    if not isinstance(doc.get("cases", []), list):
        problems.append({"field": "cases", "message": "A list of cases."})
    if not isinstance(doc.get("replay_checks", []), list):
        problems.append({"field": "replay_checks", "message": "A list of checks."})
    if problems:
        raise _invalid("The YAML document is invalid.", problems)
    return {key: doc[key] for key in ("name", "description", "gates_publish", "replay_checks", "cases") if key in doc}
