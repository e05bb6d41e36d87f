"""Custom roles: composed by an organization's owners from the permission catalog, named, assigned like a
built-in role. The kernel's one permission map (`agenticos.permissions.permissions_of`) reads them through
`DatabaseRoles`, registered at start-up (identity.apps)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agenticos import audit
from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.models import Invitation, Membership
from agenticos.permissions import CUSTOM_PREFIX, OWNER_ONLY, PERMISSIONS, ROLE_PERMISSIONS, Role
from agenticos.strings import digits_only
from identity.models import CustomRole

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

# What an owner may put in a custom role: the whole catalog but the owner-only permissions.
COMPOSABLE = [p for p in PERMISSIONS if p not in OWNER_ONLY]


def _pk(role: str) -> int | None:
    raw = role[len(CUSTOM_PREFIX):] if role.startswith(CUSTOM_PREFIX) else ""
    return int(raw) if digits_only(raw) and len(raw) < 19 else None


class DatabaseRoles:
    def permissions(self, role: str, organization_id: Any = None) -> frozenset[str] | None:
        pk = _pk(role)
        if pk is None:
            return None
        rows = CustomRole.objects.filter(pk=pk)
        if organization_id is not None:
            rows = rows.filter(organization_id=organization_id)
        found = rows.values_list("permissions", flat=True).first()
        return frozenset(p for p in found if p in PERMISSIONS) if found is not None else None

    def exists(self, organization_id: Any, role: str) -> bool:
        pk = _pk(role)
        return pk is not None and CustomRole.objects.filter(pk=pk, organization_id=organization_id).exists()

    def label(self, role: str) -> str | None:
        pk = _pk(role)
        return CustomRole.objects.filter(pk=pk).values_list("name", flat=True).first() if pk else None


def _clean(name: str, permissions: Any) -> tuple[str, list[str]]:
    name = (name or "").strip()
    problems = []
    if not name or len(name) > 80:
        problems.append({"field": "name", "message": "A role needs a name of at most 80 characters."})
    if name.lower() in Role.values:
        problems.append({"field": "name", "message": "That is the name of a built-in role."})
    if not isinstance(permissions, list) or not all(isinstance(p, str) for p in permissions):
        problems.append({"field": "permissions", "message": "A list of permissions from the catalog."})
        permissions = []
    unknown = [p for p in permissions if p not in COMPOSABLE]
    if unknown:
        problems.append({"field": "permissions", "message": f"Not in the catalog of composable permissions: {unknown}"})
    if problems:
        raise Invalid("The role is invalid.", details={"problems": problems})
    return name, sorted(set(permissions))


def _check_within_own(actor: Actor, permissions: list[str]) -> None:
    """Nobody composes a role that may do more than they may (an owner may compose anything composable)."""
    extra = {p for p in permissions if not actor.has(p)}
    if extra:
        raise Invalid("A role cannot hold permissions you do not have.",
                      details={"problems": [{"field": "permissions", "message": f"Not yours to give: {sorted(extra)}"}]})


def create_role(*, actor: Actor, name: str, permissions: Any, description: str = "") -> CustomRole:
    actor.require("roles:manage")
    name, perms = _clean(name, permissions)
    _check_within_own(actor, perms)
    try:
        with transaction.atomic():
            role = CustomRole.objects.create(organization=actor.organization, name=name, permissions=perms,
                                             description=(description or "")[:300])
            audit.record(actor=actor.user, organization=actor.organization, action="role.created", target=role,
                         details={"permissions": perms}, ip_address=actor.extra.get("ip"))
    except IntegrityError:
        raise Conflict("A role with this name already exists.", details={"field": "name"}) from None
    return role


def update_role(*, actor: Actor, role: CustomRole, name: str | None = None, permissions: Any = None,
                description: str | None = None) -> CustomRole:
    actor.require("roles:manage")
    if role.organization_id != actor.organization.pk:
        raise NotFound("Role not found.")
    new_name, perms = _clean(role.name if name is None else name,
                             list(role.permissions) if permissions is None else permissions)
    _check_within_own(actor, perms)
    try:
        with transaction.atomic():
            role = CustomRole.objects.select_for_update().get(pk=role.pk)
            before = list(role.permissions)
            role.name, role.permissions = new_name, perms
            if description is not None:
                role.description = description[:300]
            role.updated_at = timezone.now()
            role.save()
            audit.record(actor=actor.user, organization=actor.organization, action="role.updated", target=role,
                         details={"added": sorted(set(perms) - set(before)),
                                  "removed": sorted(set(before) - set(perms))}, ip_address=actor.extra.get("ip"))
    except IntegrityError:
        raise Conflict("A role with this name already exists.", details={"field": "name"}) from None
    return role


def delete_role(*, actor: Actor, role: CustomRole) -> None:
    actor.require("roles:manage")
    if role.organization_id != actor.organization.pk:
        raise NotFound("Role not found.")
    with transaction.atomic():
        held = Membership.objects.filter(organization=actor.organization, role=role.key).count()
        pending = Invitation.objects.filter(organization=actor.organization, role=role.key,
                                            accepted_at__isnull=True).count()
        from identity.models import OidcConnection

        sso = OidcConnection.objects.filter(organization=actor.organization, default_role=role.key).exists()
        if held or pending or sso:
            raise Conflict("Members, invitations or single sign-on still use this role: give them another first.",
                           details={"members": held, "invitations": pending, "sso_default": sso})
        audit.record(actor=actor.user, organization=actor.organization, action="role.deleted", target=role,
                     ip_address=actor.extra.get("ip"))
        role.delete()


def role_choices(organization_id: Any) -> list[tuple[str, str]]:
    """Every role a member of the organization may hold: the built-in presets, then its custom roles."""
    custom = [(r.key, r.name) for r in CustomRole.objects.filter(organization_id=organization_id)]
    return [(str(v), str(label)) for v, label in Role.choices] + custom


def preset_permissions() -> dict[str, list[str]]:
    """The built-in roles' permissions, for an owner composing a role from a preset."""
    return {str(role): sorted(perms - OWNER_ONLY) for role, perms in ROLE_PERMISSIONS.items()}
