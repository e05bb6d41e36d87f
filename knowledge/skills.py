"""Skills: a SKILL.md (name/description front matter + instructions) plus resource files, per organization.

Runs read them through pydantic-ai-skills from a materialized library on this machine's disk:
`<DATA_DIR>/skills-cache/<skill id>-<version stamp>/<name>/`, written once per version of a skill, so a
changed skill gets a new folder and a run never sees a half-written one.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Conflict, Invalid
from agenticos.tenancy import Actor
from knowledge.models import Skill, SkillFile, SkillProposal

MAX_FILES = 50
MAX_FILE_CHARS = 200_000


def parse(skill_md: str) -> tuple[str, str, str]:
    """(name, description, body) from SKILL.md text, or Invalid naming the problem."""
    from pydantic_ai_skills._parsing import parse_skill_md, validate_skill_name

    try:
        front, body = parse_skill_md(skill_md)
    except ValueError as exc:
        raise Invalid(f"SKILL.md front matter is not valid YAML: {exc}", details={"field": "skill_md"}) from exc
    name = str(front.get("name") or "").strip()
    description = str(front.get("description") or "").strip()
    if not name or not description:
        raise Invalid("SKILL.md needs front matter with a name and a description.", details={"field": "skill_md"})
    try:
        name = validate_skill_name(name, context="SKILL.md")
    except ValueError as exc:
        raise Invalid(str(exc), details={"field": "skill_md"}) from exc
    if len(description) > 1024:
        raise Invalid("The description is longer than 1,024 characters.", details={"field": "skill_md"})
    return name, description, body


def _clean_files(files: list[dict]) -> list[tuple[str, str]]:
    if len(files) > MAX_FILES:
        raise Invalid(f"A skill carries at most {MAX_FILES} files.", details={"field": "files"})
    out = []
    for item in files:
        path = PurePosixPath(str(item.get("path") or ""))
        if not str(path) or path.is_absolute() or ".." in path.parts or path.name == "SKILL.md":
            raise Invalid(f"{item.get('path')!r} is not a relative file path inside the skill.",
                          details={"field": "files"})
        content = str(item.get("content") or "")
        if len(content) > MAX_FILE_CHARS:
            raise Invalid(f"{path} is longer than {MAX_FILE_CHARS} characters.", details={"field": "files"})
        out.append((str(path), content))
    return out


def create_skill(*, actor: Actor, skill_md: str, files: list[dict] | None = None) -> Skill:
    name, description, body = parse(skill_md)
    cleaned = _clean_files(files or [])
    with transaction.atomic():
        if Skill.objects.filter(organization=actor.organization, name=name).exists():
            raise Conflict("A skill with this name already exists.", details={"field": "skill_md"})
        skill = Skill.objects.create(organization=actor.organization, name=name, description=description, body=body,
                                     created_by=actor.user)
        SkillFile.objects.bulk_create([SkillFile(skill=skill, path=p, content=c) for p, c in cleaned])
        audit.record(actor=actor.user, organization=actor.organization, action="skill.create", target=skill,
                     ip_address=actor.extra.get("ip"))
    return skill


def update_skill(*, actor: Actor, skill: Skill, skill_md: str | None = None, files: list[dict] | None = None) -> Skill:
    with transaction.atomic():
        if skill_md is not None:
            name, description, body = parse(skill_md)
            if name != skill.name and Skill.objects.filter(organization=actor.organization, name=name).exists():
                raise Conflict("A skill with this name already exists.", details={"field": "skill_md"})
            skill.name, skill.description, skill.body = name, description, body
        if files is not None:
            cleaned = _clean_files(files)
            skill.files.all().delete()
            SkillFile.objects.bulk_create([SkillFile(skill=skill, path=p, content=c) for p, c in cleaned])
        skill.updated_at = timezone.now()
        skill.save()
        audit.record(actor=actor.user, organization=actor.organization, action="skill.update", target=skill,
                     ip_address=actor.extra.get("ip"))
    return skill


def delete_skill(*, actor: Actor, skill: Skill) -> None:
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="skill.delete", target=skill,
                     ip_address=actor.extra.get("ip"))
        skill.delete()


def skill_md_text(skill: Skill) -> str:
    description = skill.description.replace("\n", " ").replace('"', "'")
    return f'---\nname: {skill.name}\ndescription: "{description}"\n---\n\n{skill.body}\n'


# ------------------------------------------------------------------ proposals (agent edits in a workspace)


def propose_edit(*, organization_id: str, skill_id: str, path: str, content: str, run_id: str | None = None
                 ) -> SkillProposal:
    """An agent's edit of `/workspace/skills/<name>/<path>` becomes a proposal, never a change."""
    skill = Skill.objects.get(organization_id=organization_id, pk=skill_id)
    return SkillProposal.objects.create(organization_id=organization_id, skill=skill, path=path, content=content,
                                        run_id=run_id)


def decide_proposal(*, actor: Actor, proposal: SkillProposal, accept: bool) -> SkillProposal:
    actor.require("skills:edit")
    with transaction.atomic():
        proposal = SkillProposal.objects.select_for_update().get(pk=proposal.pk)
        if proposal.status != SkillProposal.Status.PENDING:
            raise Conflict("This proposal was already decided.")
        if accept:
            skill = proposal.skill
            if proposal.path == "SKILL.md":
                skill.name, skill.description, skill.body = parse(proposal.content)
            else:
                _clean_files([{"path": proposal.path, "content": proposal.content}])
                SkillFile.objects.update_or_create(skill=skill, path=proposal.path,
                                                   defaults={"content": proposal.content})
            skill.updated_at = timezone.now()
            skill.save()
        proposal.status = SkillProposal.Status.ACCEPTED if accept else SkillProposal.Status.DISCARDED
        proposal.decided_by = actor.user
        proposal.decided_at = timezone.now()
        proposal.save()
        audit.record(actor=actor.user, organization=actor.organization,
                     action="skill.proposal_accepted" if accept else "skill.proposal_discarded", target=proposal.skill,
                     details={"path": proposal.path, "proposal": str(proposal.pk)}, ip_address=actor.extra.get("ip"))
    return proposal


# ------------------------------------------------------------------ materialization for runs


def _cache_root() -> Path:
    return Path(getattr(settings, "SKILLS_CACHE_DIR", "") or Path(settings.DATA_DIR) / "skills-cache")


def bound_skills(organization_id: str, skill_ids: list[str]) -> list[Skill]:
    valid = []
    for raw in skill_ids:
        try:
            valid.append(uuid.UUID(str(raw)))
        except ValueError:
            continue
    return list(Skill.objects.filter(organization_id=organization_id, pk__in=valid).prefetch_related("files"))


def materialize(skills: list[Skill]) -> Path:
    """A library folder holding exactly these skills (each `<name>/SKILL.md` + files); reused when unchanged."""
    stamp = hashlib.sha256("|".join(f"{s.pk}:{s.updated_at.isoformat()}" for s in
                                    sorted(skills, key=lambda s: str(s.pk))).encode()).hexdigest()[:24]
    library = _cache_root() / stamp
    if library.is_dir():
        return library
    library.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=library.parent))
    for skill in skills:
        folder = staging / skill.name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(skill_md_text(skill), encoding="utf-8")
        for item in skill.files.all():
            target = folder / item.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(item.content, encoding="utf-8")
    try:
        os.replace(staging, library)  # atomic: a concurrent run sees all of it or none
    except OSError:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)  # another run won the race with identical content
    return library
