"""Skills: each bound skill is a deferred capability the model loads with pydantic-ai's own
`load_capability` (so that tool is not declared here and a spec cannot gate or rename it).
`read_skill_resource` — from pydantic-ai-skills — is the one tool this capability declares, offered only
when a bound skill carries a file. `run_skill_script` is off: a skill's files reach a sandbox under
/workspace/skills/, where the sandbox's own `execute` runs them under the operator's limits.
"""

from __future__ import annotations

from pydantic_ai_skills import SkillsCapability

from capabilities.base import BuildContext, Built, Capability, ToolDecl, tool_text
from capabilities.skills import bundled
from knowledge import skills as skill_store
from knowledge.runtime import spec_for

READ_SKILL_RESOURCE = ToolDecl(
    id="read_skill_resource",
    description=tool_text(
        what="Read one file bundled with a skill you have loaded.",
        when="After load_capability for the skill, when its instructions point to a file (a reference, a "
             "template). Load the skill first; its instructions list the exact file names.",
        args="skill_name: the skill's name. resource_name: the file's path as listed in the skill's instructions.",
        returns="The file's text. A skill that is not loaded, or a name that is not one of its files, comes back "
                "as a request to call again with a correct one.",
    ),
)


def build(ctx: BuildContext) -> list[Built]:
    spec = spec_for(ctx)
    skills = skill_store.bound_skills(ctx.organization_id, list(spec.skill_ids) if spec is not None else [])
    # Skills a bound capability ships (visual-design with Visuals) join the organization's in the one catalog.
    shipped = bundled.names_for(spec, taken={skill.name for skill in skills})
    if not skills and not shipped:
        return []
    directories = [str(skill_store.materialize(skills))] if skills else []
    if shipped:
        directories.append(str(bundled.LIBRARY))
    has_files = any(skill.files.all() for skill in skills)
    include = [skill.name for skill in skills] + shipped
    return [SkillsCapability(directories, include=include, resources=has_files, scripts=False)]


CAPABILITY = Capability(
    id="skills",
    name="Skills",
    category="knowledge",
    description="Written procedures the agent loads only when relevant, one skill at a time.",
    offers="organization procedures loaded on demand",
    examples=(
        "Follow our incident post-mortem procedure.",
        "Write the release notes the way we do.",
        "Draft the refund reply with our refund skill.",
    ),
    never_does=(
        "It never runs a skill's scripts and never changes a skill: it only reads the skills bound to this "
        "agent."
    ),
    tools=(READ_SKILL_RESOURCE,),
    scopes=("knowledge:read",),
    voice="live",
    build=build,
)
