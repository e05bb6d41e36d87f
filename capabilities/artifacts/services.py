"""Publishing and sharing applications. The tools and the API call these; nothing else writes the rows.

A publish is (organization, agent, environment, name) → one application: the first makes it, private to the
run's person; a later one with different bytes adds a version, identical bytes add nothing ("unchanged").
Edits are exact replacements against the version the run read, so a publish in between is refused rather
than overwritten.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Invalid
from capabilities.artifacts import access
from capabilities.artifacts.models import Artifact, ArtifactVersion

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
EXTENSIONS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}
READ_LIMIT = 100_000


class Problem(Exception):
    """The model's call is wrong in a way it can fix; the message names what to change."""


class Stale(Problem):
    """Edits made against a version that is no longer the current one."""


@dataclass(frozen=True)
class Published:
    artifact: Artifact
    version: ArtifactVersion
    outcome: str  # "created" | "new_version" | "unchanged"


def check_name(name: str) -> None:
    if not NAME_RE.match(name or ""):
        raise Problem(f"{name!r} is not an application name: use 1-64 lowercase letters, digits and '-', starting "
                      "with a letter or digit, e.g. 'weekly-report'.")


def format_of_path(path: str) -> str:
    lower = path.lower()
    for extension, fmt in EXTENSIONS.items():
        if lower.endswith(extension):
            return fmt
    raise Problem(f"{path!r} has an extension an application cannot be: publish a .html, .htm, .md or .markdown "
                  "file.")


def check_page(text: str) -> bytes:
    data = text.encode("utf-8")
    if not text.strip():
        raise Problem("The page is empty: give the complete document.")
    limit = settings.ARTIFACT_MAX_BYTES
    if len(data) > limit:
        raise Problem(f"The page is {len(data):,} bytes; an application is at most {limit:,} bytes: make it "
                      "smaller (less embedded data, no inline images).")
    return data


def apply_edits(text: str, edits: list[tuple[str, str]]) -> str:
    """Exact replacements, in order; each old text must occur exactly once in the text as it is by then."""
    if not edits:
        raise Problem("edits is empty: give at least one {old_text, new_text} replacement.")
    for i, (old, new) in enumerate(edits, start=1):
        if not old:
            raise Problem(f"Edit {i} has an empty old_text: copy the exact passage to replace.")
        count = text.count(old)
        if count == 0:
            raise Problem(f"Edit {i}: old_text does not occur in the page: read_artifact it and copy the exact text.")
        if count > 1:
            raise Problem(f"Edit {i}: old_text occurs {count} times in the page: include more surrounding text so it "
                          "matches one place.")
        text = text.replace(old, new, 1)
    return text


def environment_of_run(run: Any) -> str:
    """The environment a run executes (its options say so when the surface knew; else the environment that
    serves its version, production first)."""
    from agents.models import Environment

    named = str((run.options or {}).get("environment") or "")
    if named:
        return named
    names = list(Environment.objects.filter(agent_id=run.agent_id, version_id=run.version_id)
                 .values_list("name", flat=True))
    if "production" in names or not names:
        return "production"
    return sorted(names)[0]


def find(organization_id: Any, agent_id: Any, environment: str, name: str) -> Artifact | None:
    return Artifact.objects.filter(organization_id=organization_id, agent_id=agent_id, environment=environment,
                                   name=name).first()


def current(artifact: Artifact) -> ArtifactVersion | None:
    return artifact.versions.filter(number=artifact.current_version).first()


def publish(*, organization_id: Any, agent_id: Any, environment: str, name: str, owner_id: Any, text: str,
            fmt: str, title: str = "", run_id: Any = None, based_on: int | None = None) -> Published:
    """Create the application or add a version. `based_on` (edits) is the version the edits were made on."""
    check_name(name)
    data = check_page(text)
    digest = hashlib.sha256(data).hexdigest()
    with transaction.atomic():
        artifact, created = Artifact.objects.select_for_update().get_or_create(
            organization_id=organization_id, agent_id=agent_id, environment=environment, name=name,
            defaults={"owner_id": owner_id, "title": title[:200] or name})
        if based_on is not None and artifact.current_version != based_on:
            raise Stale(f"{name!r} was published again (now version {artifact.current_version}) since you read "
                        f"version {based_on}: call read_artifact again and redo your edits on what it returns.")
        latest = current(artifact)
        if latest is not None and latest.sha256 == digest and latest.format == fmt:
            if title and title[:200] != artifact.title:
                Artifact.objects.filter(pk=artifact.pk).update(title=title[:200])
            return Published(artifact, latest, "unchanged")
        number = artifact.current_version + 1
        version = ArtifactVersion.objects.create(artifact=artifact, number=number, format=fmt, content=text,
                                                 sha256=digest, size=len(data), run_id=run_id, created_by_id=owner_id)
        artifact.current_version = number
        artifact.updated_at = timezone.now()
        if title:
            artifact.title = title[:200]
        artifact.save(update_fields=["current_version", "updated_at", "title"])
        audit.record(actor=version.created_by, organization=artifact.organization,
                     action="artifact.published", target=artifact,
                     details={"version": number, "size": len(data), "run_id": str(run_id) if run_id else None})
    return Published(artifact, version, "created" if created else "new_version")


# ------------------------------------------------------------------ what a person does in the console / API


def set_visibility(*, actor: Actor, artifact: Artifact, visibility: str) -> Artifact:
    if visibility not in Artifact.Visibility.values:
        raise Invalid("Unknown visibility.", details={"problems": [
            {"field": "visibility", "message": f"one of {list(Artifact.Visibility.values)}"}]})
    access.require_share(actor, artifact)
    with transaction.atomic():
        Artifact.objects.filter(pk=artifact.pk).update(visibility=visibility)
        artifact.visibility = visibility
        audit.record(actor=actor.user, organization=actor.organization, action="artifact.visibility",
                     target=artifact, details={"visibility": visibility}, ip_address=actor.extra.get("ip"))
    return artifact


def share(*, actor: Actor, artifact: Artifact, user_id: Any, level: str) -> dict:
    access.GRANTS.require_level(level)
    have = access.require_share(actor, artifact)
    return access.GRANTS.share(actor=actor, obj=artifact, user_id=user_id, level=level, have=have)


def revoke(*, actor: Actor, artifact: Artifact, user_id: Any) -> None:
    access.require_share(actor, artifact)
    access.GRANTS.revoke(actor=actor, obj=artifact, user_id=user_id)
