"""Who reads an application and who changes it.

Levels, weakest first: view < edit. `view` opens it and its versions; `edit` publishes versions over the
console's edits, changes its visibility and shares it. Effective access is the stronger of what the role and
ownership give and what was granted (django-guardian rows through governance.object_grants), the same rule as
knowledge collections (knowledge/grants.py), with its own levels:

- `agents:edit_any` (admins, owners of the organization): edit on every application;
- the owner (the person the first publish was made for): edit;
- an application visible to the organization: view for any role that sees agents;
- a private one: nothing, unless granted.

Sharing (a grant or the visibility) needs edit *and* a role that runs agents (`agents:run`): a viewer given
edit may read every version but never widens who reads it. Every lookup is filtered by organization first,
so another organization's application is a 404, never a 403.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

from agenticos.errors import Forbidden, NotFound
from agenticos.permissions import role_has
from capabilities.artifacts.models import Artifact
from governance.object_grants import ObjectGrants

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

VIEW, EDIT = "view", "edit"
LEVELS: tuple[str, ...] = (VIEW, EDIT)
SHARE_PERMISSION = "agents:run"
GRANTS = ObjectGrants(Artifact, {VIEW: "view_artifact", EDIT: "edit_artifact"}, action_prefix="artifact")


def role_level(role: str | None, user_id: Any, artifact: Artifact) -> str | None:
    if role_has(role, "agents:edit_any"):
        return EDIT
    if user_id is not None and artifact.owner_id == user_id:
        return EDIT
    if artifact.visibility == Artifact.Visibility.ORGANIZATION and role_has(role, "agents:view"):
        return VIEW
    return None


def level_for(role: str | None, user_id: Any, artifact: Artifact, *, known_grants: dict[str, str] | None = None
              ) -> str | None:
    if role is None:
        return None
    if known_grants is None:
        known_grants = GRANTS.levels_for(user_id, [artifact.pk])
    return GRANTS.stronger(role_level(role, user_id, artifact), known_grants.get(str(artifact.pk)))


def artifact_access(actor: Actor, artifact: Artifact, *, known_grants: dict[str, str] | None = None) -> str | None:
    if artifact.organization_id != actor.organization.pk:
        return None
    return level_for(actor.role, actor.user_id, artifact, known_grants=known_grants)


def require_access(actor: Actor, artifact: Artifact, level: str) -> str:
    have = artifact_access(actor, artifact)
    if have is None:
        raise NotFound("Application not found.")
    if not GRANTS.at_least(have, level):
        raise Forbidden(f"You need {level} access to this application.", details={"needed": level, "have": have})
    return have


def require_share(actor: Actor, artifact: Artifact) -> str:
    have = require_access(actor, artifact, EDIT)
    actor.require(SHARE_PERMISSION)
    return have


def visible_artifacts(actor: Actor) -> models.QuerySet[Artifact]:
    """Every application of the actor's organization the actor can at least view, in one query."""
    qs = Artifact.objects.filter(organization=actor.organization)
    if actor.has("agents:edit_any"):
        return qs
    condition = models.Q(pk__in=GRANTS.granted_ids(actor.user_id))
    if actor.user_id is not None:
        condition |= models.Q(owner_id=actor.user_id)
    if actor.has("agents:view"):
        condition |= models.Q(visibility=Artifact.Visibility.ORGANIZATION)
    return qs.filter(condition)


def member_role(organization_id: Any, user_id: Any) -> str | None:
    """The active, unsuspended member's role (None for anyone else): what a run's person holds here."""
    from agenticos.models import Membership

    if user_id is None:
        return None
    row = Membership.objects.filter(organization_id=organization_id, user_id=user_id, user__is_active=True,
                                    is_suspended=False).values_list("role", flat=True).first()
    return row
