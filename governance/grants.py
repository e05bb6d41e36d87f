"""Per-object grants on agents (django-guardian) and the one helper that decides access.

Levels, weakest first: view < use < edit < publish. Effective access is the stronger of what the
organization role gives and what was granted on the object. Every agent service calls
`require_agent_access`; nothing else compares roles or grants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

from agenticos.errors import Forbidden, NotFound
from agents.models import Agent, Visibility
from governance.object_grants import ObjectGrants

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

VIEW, USE, EDIT, PUBLISH = "view", "use", "edit", "publish"
LEVELS: tuple[str, ...] = (VIEW, USE, EDIT, PUBLISH)
# The guardian codename that carries each level (Agent.Meta.permissions + the default view perm).
GRANTS = ObjectGrants(
    Agent,
    {VIEW: "view_agent", USE: "use_agent", EDIT: "edit_agent", PUBLISH: "publish_agent"},
    action_prefix="agent",
)
LEVEL_RANK = GRANTS.rank
stronger = GRANTS.stronger
at_least = GRANTS.at_least
grant_levels = GRANTS.levels_for


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
    from_role = role_level(actor, agent)
    if from_role == PUBLISH:  # nothing a grant gives is stronger: no need to ask for grants
        return from_role
    if known_grants is None:
        known_grants = grant_levels(actor.user_id, [agent.pk])
    return stronger(from_role, known_grants.get(str(agent.pk)))


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
    condition = models.Q(pk__in=GRANTS.granted_ids(actor.user_id))
    # Mirrors role_level: owned agents and organization-wide ones, for roles that can see agents at all.
    if any(actor.has(p) for p in ("agents:view", "agents:run", "agents:edit")):
        condition |= models.Q(visibility=Visibility.ORGANIZATION)
        if actor.user_id is not None:
            condition |= models.Q(owner_id=actor.user_id)
    return qs.filter(condition)


def agent_grants(agent: Agent) -> list[dict]:
    """[{user_id, email, level}] for everyone with a grant on `agent`."""
    return GRANTS.holders(agent)


def share_agent(*, actor: Actor, agent: Agent, user_id, level: str) -> dict:
    """Grant `level` on `agent` to a member of the same organization (replaces an earlier grant).

    Sharing needs edit access, and nobody can grant more than they have.
    """
    GRANTS.require_level(level)
    have = require_agent_access(actor, agent, EDIT)
    return GRANTS.share(actor=actor, obj=agent, user_id=user_id, level=level, have=have)


def revoke_agent_grant(*, actor: Actor, agent: Agent, user_id) -> None:
    require_agent_access(actor, agent, EDIT)
    GRANTS.revoke(actor=actor, obj=agent, user_id=user_id)


def drop_grants_for_agent(agent: Agent) -> None:
    """Generic object permissions do not cascade; call inside the transaction that deletes the agent."""
    GRANTS.drop_for_object(agent)


def drop_grants_for_member(organization, user_id) -> None:
    """A removed member keeps nothing: clear their grants on this organization's agents."""
    GRANTS.drop_for_member(organization, user_id)


def on_member_removed(sender: Any, *, organization: Any, user_id: Any, **kwargs: Any) -> None:
    """agenticos.signals.member_removed: in the removing transaction."""
    drop_grants_for_member(organization, user_id)
