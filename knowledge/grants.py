"""Per-object grants on knowledge collections (django-guardian) and the one helper that decides access.

Levels, weakest first: view < use < edit. `view` lists the collection and its documents, `use` binds it
to an agent one can edit, `edit` changes it, uploads and deletes documents, and shares it. Effective
access is the stronger of what the organization role gives and what was granted on the collection —
the same rule as agents (`governance.grants`), kept apart because the levels and the role mapping differ.

What the role gives:
- `agents:edit_any` (admins, owners): edit on every collection of the organization;
- the creator: edit with `knowledge:manage`, else use;
- a collection visible to the organization: edit with `knowledge:manage`, use with `agents:edit` or
  `agents:run`, view with `agents:view` — the behaviour before grants existed;
- a private collection: nothing, unless granted.

Grants only go to members of the collection's own organization: an outsider organization can never see,
bind or be granted a collection (every lookup is filtered by the actor's organization first).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import models

from agenticos.errors import Forbidden, NotFound
from governance.object_grants import ObjectGrants
from knowledge.models import Collection

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

VIEW, USE, EDIT = "view", "use", "edit"
LEVELS: tuple[str, ...] = (VIEW, USE, EDIT)
GRANTS = ObjectGrants(
    Collection,
    {VIEW: "view_collection", USE: "use_collection", EDIT: "edit_collection"},
    action_prefix="collection",
)
LEVEL_RANK = GRANTS.rank
stronger = GRANTS.stronger
at_least = GRANTS.at_least
grant_levels = GRANTS.levels_for


def role_level(actor: Actor, collection: Collection) -> str | None:
    """What the organization role alone gives on this collection."""
    if actor.has("agents:edit_any"):
        return EDIT
    is_creator = actor.user_id is not None and collection.created_by_id == actor.user_id
    if is_creator:
        return EDIT if actor.has("knowledge:manage") else USE
    if collection.visibility != Collection.Visibility.ORGANIZATION:
        return None
    if actor.has("knowledge:manage"):
        return EDIT
    if actor.has("agents:edit") or actor.has("agents:run"):
        return USE
    if actor.has("agents:view"):
        return VIEW
    return None


def collection_access(actor: Actor, collection: Collection, *, known_grants: dict[str, str] | None = None) -> str | None:
    """The actor's effective level on `collection` ("view" | "use" | "edit"), or None (not even visible)."""
    if collection.organization_id != actor.organization.pk:
        return None
    if known_grants is None:
        known_grants = grant_levels(actor.user_id, [collection.pk])
    return stronger(role_level(actor, collection), known_grants.get(str(collection.pk)))


def require_collection_access(actor: Actor, collection: Collection, level: str) -> str:
    """NotFound when the actor cannot even see the collection, Forbidden when the level is too weak."""
    have = collection_access(actor, collection)
    if have is None:
        raise NotFound("Collection not found.")
    if not at_least(have, level):
        raise Forbidden(f"You need {level} access to this collection.", details={"needed": level, "have": have})
    return have


def visible_collections(actor: Actor) -> models.QuerySet[Collection]:
    """Every collection of the actor's organization the actor can at least view, in one query."""
    qs = Collection.objects.filter(organization=actor.organization)
    if actor.has("agents:edit_any"):
        return qs
    condition = models.Q(pk__in=GRANTS.granted_ids(actor.user_id))
    if actor.user_id is not None:
        condition |= models.Q(created_by_id=actor.user_id)
    # Mirrors role_level: organization-wide collections for any role that can see agents at all.
    if any(actor.has(p) for p in ("agents:view", "agents:run", "agents:edit", "knowledge:manage")):
        condition |= models.Q(visibility=Collection.Visibility.ORGANIZATION)
    return qs.filter(condition)


def unusable_collection_ids(actor: Actor, collection_ids: Iterable[Any]) -> list[str]:
    """The ids among `collection_ids` the actor may not bind to an agent (unknown, foreign, or weaker than
    use). Spec validation calls this so a grantee can bind a shared collection and nobody else can."""
    import uuid

    wanted: dict[str, uuid.UUID] = {}
    bad: list[str] = []
    for raw in collection_ids:
        try:
            wanted[str(raw)] = uuid.UUID(str(raw))
        except (TypeError, ValueError):
            bad.append(str(raw))
    rows = {str(c.pk): c for c in Collection.objects.filter(organization=actor.organization,
                                                            pk__in=list(wanted.values()))}
    levels = grant_levels(actor.user_id, list(rows))
    for raw, pk in wanted.items():
        collection = rows.get(str(pk))
        if collection is None or not at_least(collection_access(actor, collection, known_grants=levels), USE):
            bad.append(raw)
    return bad


def collection_grants(collection: Collection) -> list[dict]:
    """[{user_id, email, level}] for everyone with a grant on `collection`."""
    return GRANTS.holders(collection)


def share_collection(*, actor: Actor, collection: Collection, user_id: Any, level: str) -> dict:
    """Grant `level` on `collection` to a member of the same organization (replaces an earlier grant).
    Sharing needs edit access; nobody grants more than they have."""
    GRANTS.require_level(level)
    have = require_collection_access(actor, collection, EDIT)
    return GRANTS.share(actor=actor, obj=collection, user_id=user_id, level=level, have=have)


def revoke_collection_grant(*, actor: Actor, collection: Collection, user_id: Any) -> None:
    require_collection_access(actor, collection, EDIT)
    GRANTS.revoke(actor=actor, obj=collection, user_id=user_id)


def drop_grants_for_collection(collection: Collection) -> None:
    """Generic object permissions do not cascade; call inside the transaction that deletes the collection."""
    GRANTS.drop_for_object(collection)


def drop_grants_for_member(organization: Any, user_id: Any) -> None:
    """A removed member keeps nothing: clear their grants on this organization's collections."""
    GRANTS.drop_for_member(organization, user_id)


def on_member_removed(sender: Any, *, organization: Any, user_id: Any, **kwargs: Any) -> None:
    """agenticos.signals.member_removed: in the removing transaction."""
    drop_grants_for_member(organization, user_id)
