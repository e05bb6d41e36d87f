"""Permissions as data: the catalog, and which roles hold which permissions.

Views and services declare what they need ("agents:edit"); nothing compares role names directly.
"""

from __future__ import annotations

from typing import Protocol

from django.db import models


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    BUILDER = "builder", "Builder"
    MEMBER = "member", "Member"
    VIEWER = "viewer", "Viewer"


# Higher outranks lower. Nobody may change the role of someone who outranks them.
ROLE_RANK: dict[str, int] = {
    Role.OWNER: 50,
    Role.ADMIN: 40,
    Role.BUILDER: 30,
    Role.MEMBER: 20,
    Role.VIEWER: 10,
}

PERMISSIONS: dict[str, str] = {
    "agents:view": "See agents, their versions and environments",
    "agents:edit": "Create agents and edit drafts",
    "agents:publish": "Publish versions and promote environments",
    "agents:run": "Run agents (chat, API)",
    "agents:edit_any": "Edit any agent of the organization, not only owned or granted ones",
    "secrets:view": "See secrets (never their values) and use them in agents",
    "secrets:manage": "Create, rotate and delete secrets",
    "models:manage": "Create and edit model profiles",
    "approvals:decide": "Approve or reject parked tool calls",
    "budgets:manage": "Change the organization's budget",
    "organization:manage": "Change the organization's logo",
    "members:manage": "Invite, change roles and remove members",
    "runs:view": "See every run of the organization",
    "audit:read": "Read the audit log",
    "apikeys:manage": "Create and revoke one's own API keys",
    "embeds:manage": "Create and change embeds",
    "bots:manage": "Register channel bots and bindings",
    "knowledge:manage": "Manage collections, documents, context files and skills",
    "skills:edit": "Accept or discard skill edits proposed by agents",
    "signin:manage": "Configure sign-in: single sign-on, verified domains, require SSO",
    "roles:manage": "Compose custom roles from this catalog",
}

_VIEWER = {"agents:view", "secrets:view"}
_MEMBER = _VIEWER | {"agents:run", "apikeys:manage"}
_BUILDER = _MEMBER | {
    "agents:edit",
    "agents:publish",
    "models:manage",
    "embeds:manage",
    "bots:manage",
    "knowledge:manage",
    "skills:edit",
}
_ADMIN = _BUILDER | {
    "agents:edit_any",
    "secrets:manage",
    "approvals:decide",
    "budgets:manage",
    "organization:manage",
    "members:manage",
    "runs:view",
    "audit:read",
}
ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    # Sign-in decides who the organization is: only its owners change it.
    Role.OWNER: frozenset(_ADMIN | {"signin:manage", "roles:manage"}),
    Role.ADMIN: frozenset(_ADMIN),
    Role.BUILDER: frozenset(_BUILDER),
    Role.MEMBER: frozenset(_MEMBER),
    Role.VIEWER: frozenset(_VIEWER),
}

assert all(p in PERMISSIONS for perms in ROLE_PERMISSIONS.values() for p in perms)


class KeyScope(models.TextChoices):
    """What an API key may do, within its person's role: an integration that only reads cannot start runs."""

    READ = "read", "Read only"
    RUN = "run", "Run agents"
    ADMIN = "admin", "Everything my role allows"


# The permissions a key of each scope may exercise with a write (POST, PUT, PATCH, DELETE); None = all its
# role has. Reads (GET, HEAD, OPTIONS) are never limited by scope: only by the role.
SCOPE_WRITE_PERMISSIONS: dict[str, frozenset[str] | None] = {
    KeyScope.READ: frozenset(),
    KeyScope.RUN: frozenset({"agents:run"}),
    KeyScope.ADMIN: None,
}
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

assert all(p in PERMISSIONS for perms in SCOPE_WRITE_PERMISSIONS.values() if perms for p in perms)


def scope_allows(scope: str, method: str, permission: str | None) -> bool:
    """Whether a key of `scope` may make a `method` request to an endpoint that needs `permission` for it
    (None: the endpoint declares none; only an admin key may write there). A request that names no method is
    held as a write: the pass reads get is never a default."""
    if (method or "").upper() in SAFE_METHODS:
        return True
    allowed = SCOPE_WRITE_PERMISSIONS.get(scope, frozenset())
    if allowed is None:
        return True
    return permission is not None and permission in allowed


# ------------------------------------------------------------------ custom roles
#
# An organization's owners compose roles from the catalog above (identity.roles). A member holding one has the role
# key "custom:<id>"; the kernel reads its permissions through the source the identity app registers at start-up
# (`register_custom_roles`), so every check still goes through `permissions_of` — the one map. The five built-in
# roles stay as they are, as presets.

CUSTOM_PREFIX = "custom:"
# Permissions no custom role may hold: deciding how the organization signs in and who composes roles stays with
# its owners.
OWNER_ONLY = frozenset({"signin:manage", "roles:manage"})


class CustomRoleSource(Protocol):
    def permissions(self, role: str, organization_id: object = None) -> frozenset[str] | None: ...

    def exists(self, organization_id: object, role: str) -> bool: ...

    def label(self, role: str) -> str | None: ...


_custom_roles: CustomRoleSource | None = None


def register_custom_roles(source: CustomRoleSource) -> None:
    global _custom_roles
    _custom_roles = source


def is_custom(role: str | None) -> bool:
    return bool(role) and str(role).startswith(CUSTOM_PREFIX)


def permissions_of(role: str | None, organization_id: object = None) -> frozenset[str]:
    """What `role` may do: the one permission map every check reads (a role it does not know may do nothing).
    With `organization_id`, a custom role counts only in the organization that composed it."""
    if role is None:
        return frozenset()
    if is_custom(role):
        found = _custom_roles.permissions(role, organization_id) if _custom_roles is not None else None
        return (found or frozenset()) - OWNER_ONLY
    return ROLE_PERMISSIONS.get(role, frozenset())


def role_label(role: str | None) -> str:
    """How a role reads to people: the built-in's label or the custom role's name."""
    if is_custom(role):
        found = _custom_roles.label(str(role)) if _custom_roles is not None else None
        return found or str(role)
    return str(Role(role).label) if role in Role.values else str(role or "")


def role_exists(organization_id: object, role: str) -> bool:
    """Whether `role` is a role members of `organization_id` may hold: a built-in one, or one of its own."""
    if is_custom(role):
        return _custom_roles is not None and _custom_roles.exists(organization_id, role)
    return role in ROLE_PERMISSIONS


def role_has(role: str | None, permission: str) -> bool:
    if permission not in PERMISSIONS:
        raise KeyError(f"unknown permission {permission!r}")
    return permission in permissions_of(role)


def outranks(role_a: str, role_b: str) -> bool:
    """Whether someone holding `role_b` may not manage (or give) `role_a`. Built-in roles by rank; where a custom
    role is involved, by what the roles may do: `role_a` outranks `role_b` when it may do something `role_b`
    may not (an owner therefore outranks every custom role, which can never hold the owner-only permissions)."""
    if role_a in ROLE_RANK and role_b in ROLE_RANK:
        return ROLE_RANK[role_a] > ROLE_RANK[role_b]
    if role_b == Role.OWNER:
        return False
    return not permissions_of(role_a) <= permissions_of(role_b) or role_a == Role.OWNER
