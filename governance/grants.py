"""Per-object grants on agents (django-guardian) and the one helper that decides access.

Levels, weakest first: view < use < edit < publish. Effective access is the stronger of what the
organization role gives and what was granted on the object. Every agent service calls
`require_agent_access`; nothing else compares roles or grants.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models.functions import Cast
from guardian.models import UserObjectPermission
from guardian.shortcuts import assign_perm

from agenticos import audit
from agenticos.errors import Forbidden, Invalid, NotFound
from agenticos.models import Membership
from agents.models import Agent, Visibility

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

VIEW, USE, EDIT, PUBLISH = "view", "use", "edit", "publish"
LEVELS: tuple[str, ...] = (VIEW, USE, EDIT, PUBLISH)
LEVEL_RANK: dict[str, int] = {level: rank for rank, level in enumerate(LEVELS, start=1)}
# The guardian codename that carries each level (Agent.Meta.permissions + the default view perm).
LEVEL_CODENAME: dict[str, str] = {
    VIEW: "view_agent",
    USE: "use_agent",
    EDIT: "edit_agent",
    PUBLISH: "publish_agent",
}
CODENAME_LEVEL: dict[str, str] = {codename: level for level, codename in LEVEL_CODENAME.items()}


def stronger(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if LEVEL_RANK[a] >= LEVEL_RANK[b] else b


def at_least(level: str | None, needed: str) -> bool:
    return level is not None and LEVEL_RANK[level] >= LEVEL_RANK[needed]


def _agent_content_type() -> ContentType:
    return ContentType.objects.get_for_model(Agent)


def _grant_rows(user_id, agent_ids: Iterable | None = None) -> models.QuerySet:
    qs = UserObjectPermission.objects.filter(
        user_id=user_id,
        content_type=_agent_content_type(),
        permission__codename__in=list(CODENAME_LEVEL),
    )
    if agent_ids is not None:
        qs = qs.filter(object_pk__in=[str(pk) for pk in agent_ids])
    return qs


def grant_levels(user_id, agent_ids: Iterable | None = None) -> dict[str, str]:
    """{agent id (str): granted level} for one person, in one query."""
    if user_id is None:
        return {}
    levels: dict[str, str] = {}
    for object_pk, codename in _grant_rows(user_id, agent_ids).values_list("object_pk", "permission__codename"):
        levels[object_pk] = stronger(levels.get(object_pk), CODENAME_LEVEL[codename]) or VIEW
    return levels


def role_level(actor: Actor, agent: Agent) -> str | None:
    """What the organization role alone gives on this agent."""
    if actor.has("agents:edit_any"):
        return PUBLISH
    is_owner = actor.user_id is not None and agent.owner_id == actor.user_id
    if is_owner and actor.has("agents:edit"):
        return PUBLISH if actor.has("agents:publish") else EDIT
    if agent.visibility == Visibility.ORGANIZATION or is_owner:
        if actor.has("agents:run"):
            return USE
        if actor.has("agents:view"):
            return VIEW
    return None


def agent_access(actor: Actor, agent: Agent, *, known_grants: dict[str, str] | None = None) -> str | None:
    """The actor's effective level on `agent` ("view" | "use" | "edit" | "publish"), or None.

    `known_grants` lets list code pass what `grant_levels` already fetched in bulk (else one query).
    """
    if agent.organization_id != actor.organization.pk:
        return None
    if known_grants is None:
        known_grants = grant_levels(actor.user_id, [agent.pk])
    return stronger(role_level(actor, agent), known_grants.get(str(agent.pk)))


def require_agent_access(actor: Actor, agent: Agent, level: str) -> str:
    """Raise NotFound when the actor cannot even see the agent, Forbidden when the level is too weak."""
    have = agent_access(actor, agent)
    if have is None:
        raise NotFound("Agent not found.")
    if not at_least(have, level):
        raise Forbidden(
            f"You need {level} access to this agent.", details={"needed": level, "have": have}
        )
    return have


def visible_agents(actor: Actor) -> models.QuerySet[Agent]:
    """Every agent of the actor's organization the actor can at least view, in one query."""
    qs = Agent.objects.filter(organization=actor.organization)
    if actor.has("agents:edit_any"):
        return qs
    granted_ids = _grant_rows(actor.user_id).annotate(agent_id=Cast("object_pk", models.UUIDField())).values(
        "agent_id"
    )
    condition = models.Q(pk__in=granted_ids)
    # Mirrors role_level: owned agents and organization-wide ones, for roles that can see agents at all.
    if any(actor.has(p) for p in ("agents:view", "agents:run", "agents:edit")):
        condition |= models.Q(visibility=Visibility.ORGANIZATION)
        if actor.user_id is not None:
            condition |= models.Q(owner_id=actor.user_id)
    return qs.filter(condition)


def agent_grants(agent: Agent) -> list[dict]:
    """[{user_id, email, level}] for everyone with a grant on `agent`."""
    rows = (
        UserObjectPermission.objects.filter(
            content_type=_agent_content_type(),
            object_pk=str(agent.pk),
            permission__codename__in=list(CODENAME_LEVEL),
        )
        .select_related("user", "permission")
        .order_by("user__email")
    )
    by_user: dict[int, dict] = {}
    for row in rows:
        entry = by_user.setdefault(row.user_id, {"user_id": row.user_id, "email": row.user.email, "level": None})
        entry["level"] = stronger(entry["level"], CODENAME_LEVEL[row.permission.codename])
    return list(by_user.values())


def _member_of(actor: Actor, user_id) -> Membership:
    membership = (
        Membership.objects.select_related("user")
        .filter(organization=actor.organization, user_id=user_id, user__is_active=True)
        .first()
    )
    if membership is None:
        raise NotFound("Member not found.")
    return membership


def _clear(agent: Agent, user_id) -> int:
    deleted, _ = _grant_rows(user_id, [agent.pk]).delete()
    return deleted


def share_agent(*, actor: Actor, agent: Agent, user_id, level: str) -> dict:
    """Grant `level` on `agent` to a member of the same organization (replaces an earlier grant).

    Sharing needs edit access, and nobody can grant more than they have.
    """
    if level not in LEVEL_RANK:
        raise Invalid("Unknown access level.", details={"problems": [{"field": "level", "message": f"one of {list(LEVELS)}"}]})
    have = require_agent_access(actor, agent, EDIT)
    if not at_least(have, level):
        raise Forbidden(f"You cannot grant {level} access: you have {have}.", details={"needed": level, "have": have})
    membership = _member_of(actor, user_id)
    with transaction.atomic():
        _clear(agent, membership.user_id)
        permission = Permission.objects.get(content_type=_agent_content_type(), codename=LEVEL_CODENAME[level])
        assign_perm(permission, membership.user, agent)
        audit.record(
            actor=actor.user,
            organization=actor.organization,
            action="agent.shared",
            target=agent,
            details={"user_id": membership.user_id, "email": membership.user.email, "level": level},
            ip_address=actor.extra.get("ip"),
        )
    return {"user_id": membership.user_id, "email": membership.user.email, "level": level}


def revoke_agent_grant(*, actor: Actor, agent: Agent, user_id) -> None:
    require_agent_access(actor, agent, EDIT)
    with transaction.atomic():
        if not _clear(agent, user_id):
            raise NotFound("Grant not found.")
        audit.record(
            actor=actor.user,
            organization=actor.organization,
            action="agent.unshared",
            target=agent,
            details={"user_id": user_id},
            ip_address=actor.extra.get("ip"),
        )


def drop_grants_for_agent(agent: Agent) -> None:
    """Generic object permissions do not cascade; call inside the transaction that deletes the agent."""
    UserObjectPermission.objects.filter(content_type=_agent_content_type(), object_pk=str(agent.pk)).delete()


def drop_grants_for_member(organization, user_id) -> None:
    """A removed member keeps nothing: clear their grants on this organization's agents."""
    agent_ids = [str(pk) for pk in Agent.objects.filter(organization=organization).values_list("pk", flat=True)]
    _grant_rows(user_id).filter(object_pk__in=agent_ids).delete()
