"""Skills this deployment ships with a capability (files under capabilities/skills/bundled/<name>/), not written by an
organization: the capability that ships one brings it to every agent it is bound to, so the skill is there whenever
that capability is — `visual-design` comes with Visuals (its style guide and five templates).

One run has one `SkillsCapability` (one `read_skill_resource`, one catalog): when the agent binds Skills, the
skills capability lists the bundled ones beside the organization's (`names_for`); when it does not, the shipping
capability builds one for its own (`capability_for`). A bundled skill is self-contained in its SKILL.md — no files to
read — because a capability other than Skills cannot declare `read_skill_resource` (two capabilities may not claim
one tool name) — and an organization's skill of the same name wins over it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai_skills import SkillsCapability

LIBRARY = Path(__file__).resolve().parent / "bundled"
# bundled skill name → the capability that ships it
SHIPPED_BY: dict[str, str] = {"visual-design": "visuals"}


def _bound(spec: Any) -> set[str]:
    if spec is None:
        return set()
    return {b.id for b in spec.enabled_bindings()}


def names_for(spec: Any, *, taken: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The bundled skills an agent with this spec gets, less any name its organization's skills already use."""
    bound = _bound(spec)
    return sorted(name for name, cap in SHIPPED_BY.items() if cap in bound and name not in taken)


def _skills_may_run() -> bool:
    """Whether a bound Skills would be built here (this deployment grants its scopes)."""
    from capabilities import registry

    skills = registry.find("skills")
    return skills is not None and set(skills.scopes) <= registry.granted_scopes()


def capability_for(capability_id: str, spec: Any) -> SkillsCapability | None:
    """The skills a capability ships, for an agent that does not bind Skills (which would list them itself)."""
    if "skills" in _bound(spec) and _skills_may_run():
        return None
    names = sorted(name for name, cap in SHIPPED_BY.items() if cap == capability_id)
    if not names:
        return None
    return SkillsCapability(str(LIBRARY), include=names, resources=False, scripts=False)
