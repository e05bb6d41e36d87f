"""Levels of access to one kind of object, granted per person with django-guardian: the mechanics agents
(`governance.grants`) and knowledge collections (`knowledge.grants`) share. Each keeps its own levels and
its own rule for what the organization role gives; this module only stores, reads and clears grants."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models.functions import Cast
from guardian.models import UserObjectPermission
from guardian.shortcuts import assign_perm

from agenticos import audit
from agenticos.errors import Forbidden, Invalid, NotFound
from agenticos.models import Membership

if TYPE_CHECKING:
    from agenticos.tenancy import Actor


class ObjectGrants:
    def __init__(self, model: type[models.Model], codenames: dict[str, str], *, action_prefix: str):
        """`codenames`: level → the guardian codename that carries it, weakest level first."""
        self.model = model
        self.levels: tuple[str, ...] = tuple(codenames)
        self.rank: dict[str, int] = {level: rank for rank, level in enumerate(self.levels, start=1)}
        self.codename: dict[str, str] = dict(codenames)
        self.level_of: dict[str, str] = {codename: level for level, codename in codenames.items()}
        self.action_prefix = action_prefix

    def stronger(self, a: str | None, b: str | None) -> str | None:
        if a is None:
            return b
        if b is None:
            return a
        return a if self.rank[a] >= self.rank[b] else b

    def at_least(self, level: str | None, needed: str) -> bool:
        return level is not None and self.rank[level] >= self.rank[needed]

    def content_type(self) -> ContentType:
        return ContentType.objects.get_for_model(self.model)

    def rows(self, user_id: Any, object_ids: Iterable | None = None) -> models.QuerySet:
        qs = UserObjectPermission.objects.filter(
            user_id=user_id, content_type=self.content_type(), permission__codename__in=list(self.level_of)
        )
        if object_ids is not None:
            qs = qs.filter(object_pk__in=[str(pk) for pk in object_ids])
        return qs

    def levels_for(self, user_id: Any, object_ids: Iterable | None = None) -> dict[str, str]:
        """{object id (str): granted level} for one person, in one query."""
        if user_id is None:
            return {}
        levels: dict[str, str] = {}
        for object_pk, codename in self.rows(user_id, object_ids).values_list("object_pk", "permission__codename"):
            levels[object_pk] = self.stronger(levels.get(object_pk), self.level_of[codename]) or self.levels[0]
        return levels

    def granted_ids(self, user_id: Any) -> models.QuerySet:
        """A subquery of the object ids one person holds any grant on (for `pk__in`)."""
        return self.rows(user_id).annotate(granted_pk=Cast("object_pk", models.UUIDField())).values("granted_pk")

    def holders(self, obj: models.Model) -> list[dict]:
        """[{user_id, email, level}] for everyone with a grant on `obj`, by email."""
        rows = (
            UserObjectPermission.objects.filter(
                content_type=self.content_type(), object_pk=str(obj.pk), permission__codename__in=list(self.level_of)
            )
            .select_related("user", "permission")
            .order_by("user__email")
        )
        by_user: dict[int, dict] = {}
        for row in rows:
            entry = by_user.setdefault(row.user_id, {"user_id": row.user_id, "email": row.user.email, "level": None})
            entry["level"] = self.stronger(entry["level"], self.level_of[row.permission.codename])
        return list(by_user.values())

    def clear(self, obj: models.Model, user_id: Any) -> int:
        deleted, _ = self.rows(user_id, [obj.pk]).delete()
        return deleted

    def require_level(self, level: str) -> None:
        if level not in self.rank:
            raise Invalid("Unknown access level.",
                          details={"problems": [{"field": "level", "message": f"one of {list(self.levels)}"}]})

    def share(self, *, actor: Actor, obj: models.Model, user_id: Any, level: str, have: str | None) -> dict:
        """Grant `level` to a member of the actor's organization, replacing an earlier grant; `have` is the
        actor's own access (the caller requires edit): nobody grants more than they have."""
        self.require_level(level)
        if not self.at_least(have, level):
            raise Forbidden(f"You cannot grant {level} access: you have {have}.",
                            details={"needed": level, "have": have})
        membership = member_of(actor, user_id)
        with transaction.atomic():
            self.clear(obj, membership.user_id)
            permission = Permission.objects.get(content_type=self.content_type(), codename=self.codename[level])
            assign_perm(permission, membership.user, obj)
            audit.record(actor=actor.user, organization=actor.organization, action=f"{self.action_prefix}.shared",
                         target=obj,
                         details={"user_id": membership.user_id, "email": membership.user.email, "level": level},
                         ip_address=actor.extra.get("ip"))
        return {"user_id": membership.user_id, "email": membership.user.email, "level": level}

    def revoke(self, *, actor: Actor, obj: models.Model, user_id: Any) -> None:
        with transaction.atomic():
            if not self.clear(obj, user_id):
                raise NotFound("Grant not found.")
            audit.record(actor=actor.user, organization=actor.organization, action=f"{self.action_prefix}.unshared",
                         target=obj, details={"user_id": user_id}, ip_address=actor.extra.get("ip"))

    def drop_for_object(self, obj: models.Model) -> None:
        """Generic object permissions do not cascade; call inside the transaction that deletes the object."""
        UserObjectPermission.objects.filter(content_type=self.content_type(), object_pk=str(obj.pk)).delete()

    def drop_for_member(self, organization: Any, user_id: Any) -> None:
        """A removed member keeps nothing: clear their grants on this organization's objects."""
        ids = [str(pk) for pk in self.model._default_manager.filter(organization=organization).values_list("pk", flat=True)]
        self.rows(user_id).filter(object_pk__in=ids).delete()


def member_of(actor: Actor, user_id: Any) -> Membership:
    membership = (
        Membership.objects.select_related("user")
        .filter(organization=actor.organization, user_id=user_id, user__is_active=True)
        .first()
    )
    if membership is None:
        raise NotFound("Member not found.")
    return membership
