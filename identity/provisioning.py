"""SCIM provisioning's state changes (the protocol is identity.scim): tokens, the directory's role settings, and
what an IdP does to an organization's people — create, update, deactivate, delete members, push groups that give
roles. Every change runs in one transaction with its audit row; the actor of an IdP's change is its token.

A SCIM User is a membership of the token's organization: deactivating one suspends that membership, revokes the
person's API keys there and closes their sessions there (identity.sessions) — never the person's account or their
other organizations. Their runs and approvals stay. Only e-mail addresses in a domain the organization verified
are provisioned (as only those join by SSO)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agenticos import audit, session_sockets
from agenticos import services as kernel
from agenticos.errors import Conflict, DomainError, Invalid
from agenticos.models import ApiKey, Membership, Organization, User
from agenticos.permissions import Role, permissions_of, role_exists
from agenticos.strings import digits_only
from identity import sessions
from identity.models import ScimDirectory, ScimGroup, ScimToken, ScimUser
from identity.services import domain_of, verified_domains

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

TOKEN_PREFIX = "scim_"  # noqa: S105  (a prefix that tells a SCIM token apart, not a secret)


class ScimProblem(DomainError):
    """A SCIM request refused (RFC 7644 §3.12): `scim_type` is the protocol's error keyword."""

    def __init__(self, message: str, *, status: int = 400, scim_type: str = "invalidValue") -> None:
        super().__init__(message)
        self.status = status
        self.scim_type = scim_type


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


# ------------------------------------------------------------------ owners: tokens and roles


def create_token(*, actor: Actor, name: str) -> tuple[ScimToken, str]:
    """A new token; the raw value is returned this once and never stored."""
    actor.require("signin:manage")
    name = (name or "").strip()[:100]
    if not name:
        raise Invalid("Name the token (the IdP it is for).", details={"problems": [
            {"field": "name", "message": "Required."}]})
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ScimToken.objects.create(organization=actor.organization, name=name, prefix=raw[:11],
                                         token_hash=hash_token(raw), created_by=actor.user)
        audit.record(actor=actor.user, organization=actor.organization, action="scim.token_created", target=token,
                     ip_address=actor.extra.get("ip"))
    return token, raw


def revoke_token(*, actor: Actor, token: ScimToken) -> None:
    actor.require("signin:manage")
    if token.organization_id != actor.organization.pk or token.revoked_at is not None:
        return
    with transaction.atomic():
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit.record(actor=actor.user, organization=actor.organization, action="scim.token_revoked", target=token,
                     ip_address=actor.extra.get("ip"))


def directory_of(organization: Organization) -> ScimDirectory:
    return ScimDirectory.objects.get_or_create(organization=organization)[0]


def configure_directory(*, actor: Actor, default_role: str, role_map: dict[str, str]) -> ScimDirectory:
    actor.require("signin:manage")
    problems = []
    if default_role == Role.OWNER or not role_exists(actor.organization.pk, default_role):
        problems.append({"field": "default_role", "message": "Choose a role of this organization (not owner)."})
    for group, role in role_map.items():
        if not isinstance(group, str) or not isinstance(role, str) or role == Role.OWNER or not role_exists(
                actor.organization.pk, role):
            problems.append({"field": "role_map", "message": f"{str(group)[:80]!r} names no role it may give."})
    if problems:
        raise Invalid("The provisioning settings are not valid.", details={"problems": problems})
    with transaction.atomic():
        directory = directory_of(actor.organization)
        directory.default_role, directory.role_map = default_role, role_map
        directory.updated_at = timezone.now()
        directory.save()
        audit.record(actor=actor.user, organization=actor.organization, action="scim.configured", target=directory,
                     details={"default_role": default_role, "groups": sorted(role_map)},
                     ip_address=actor.extra.get("ip"))
    return directory


# ------------------------------------------------------------------ the IdP's changes


@dataclass
class Caller:
    """Who is provisioning: a token of one organization (every read and write below is scoped to it)."""

    token: ScimToken
    ip_address: str | None = None
    organization: Organization = field(init=False)

    def __post_init__(self) -> None:
        self.organization = self.token.organization

    @property
    def label(self) -> str:
        return f"SCIM token {self.token.name} ({self.token.prefix}…)"

    def record(self, action: str, target: Any = None, **kwargs: Any) -> None:
        audit.record(actor=self.label, organization=self.organization, action=action, target=target,
                     ip_address=self.ip_address, **kwargs)


@dataclass
class UserFields:
    """The parts of a SCIM User this platform keeps."""

    user_name: str
    active: bool = True
    external_id: str = ""
    given_name: str = ""
    family_name: str = ""
    display_name: str = ""


def _checked_email(caller: Caller, user_name: str) -> str:
    email = (user_name or "").strip().lower()
    if "@" not in email or len(email) > 254:
        raise ScimProblem("userName must be the person's e-mail address.")
    if domain_of(email) not in verified_domains(caller.organization):
        raise ScimProblem("userName is not in a domain this organization has verified.")
    return email


def create_user(caller: Caller, fields: UserFields) -> Membership:
    email = _checked_email(caller, fields.user_name)
    directory = directory_of(caller.organization)
    with transaction.atomic():
        user = User.objects.select_for_update().filter(email=email).first()
        if user is not None and Membership.objects.filter(organization=caller.organization, user=user).exists():
            raise ScimProblem("A member with this userName exists.", status=409, scim_type="uniqueness")
        if user is None:
            # Provisioned people sign in through the organization's IdP: no password until they set one.
            user = User.objects.create_user(email=email, password=None, first_name=fields.given_name[:150],
                                            last_name=fields.family_name[:150],
                                            display_name=fields.display_name[:150])
        try:
            with transaction.atomic():
                membership = Membership.objects.create(organization=caller.organization, user=user,
                                                       role=directory.default_role, is_suspended=not fields.active)
        except IntegrityError:
            raise ScimProblem("A member with this userName exists.", status=409, scim_type="uniqueness") from None
        ScimUser.objects.create(membership=membership, external_id=fields.external_id[:300],
                                given_name=fields.given_name[:150], family_name=fields.family_name[:150])
        caller.record("scim.user_created", target=membership, target_name=email,
                      details={"role": membership.role, "active": fields.active})
    return membership


def _scim_row(membership: Membership) -> ScimUser:
    return ScimUser.objects.get_or_create(membership=membership)[0]


def update_user(caller: Caller, membership: Membership, changes: dict[str, Any]) -> Membership:
    """`changes` holds some of UserFields' names. `active` goes through set_active."""
    with transaction.atomic():
        membership = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
        row, user = _scim_row(membership), membership.user
        changed = []
        if "user_name" in changes:
            email = _checked_email(caller, changes["user_name"])
            if email != user.email:
                if User.objects.filter(email=email).exclude(pk=user.pk).exists():
                    raise ScimProblem("Another person has this userName.", status=409, scim_type="uniqueness")
                user.email = email
                changed.append("userName")
        for name, model, attr in (("external_id", row, "external_id"), ("given_name", row, "given_name"),
                                  ("family_name", row, "family_name"), ("display_name", user, "display_name")):
            if name in changes and getattr(model, attr) != str(changes[name] or "")[:150 if name != "external_id"
                                                                                  else 300]:
                setattr(model, attr, str(changes[name] or "")[:150 if name != "external_id" else 300])
                changed.append(name)
        if changed:
            user.save()
            row.updated_at = timezone.now()
            row.save()
            caller.record("scim.user_updated", target=membership, target_name=user.email,
                          details={"fields": sorted(changed)})
        if "active" in changes:
            set_active(caller, membership, bool(changes["active"]))
    return membership


def _keep_an_owner(membership: Membership, refusal: str) -> None:
    """The kernel's rule (it locks the owner rows, so two deactivations at once cannot both pass), said in
    SCIM's words."""
    try:
        kernel.keep_an_owner(membership.organization, membership)
    except Conflict:
        raise ScimProblem(refusal, scim_type="mutability") from None


def _stop_access(membership: Membership) -> dict[str, int]:
    """The member's API keys in the organization are revoked and their sessions there closed, at once."""
    keys = ApiKey.objects.filter(organization_id=membership.organization_id, user_id=membership.user_id,
                                 revoked_at__isnull=True).update(revoked_at=timezone.now())
    closed = sessions.close_member(membership, reason="deprovisioned")
    # Every open socket of theirs in the organization, a session without a row of ours (one older than
    # identity/) included.
    session_sockets.end_sockets(user_id=membership.user_id, organization_id=membership.organization_id)
    return {"api_keys_revoked": keys, "sessions_closed": closed}


def set_active(caller: Caller, membership: Membership, active: bool) -> Membership:
    with transaction.atomic():
        membership = Membership.objects.select_for_update().select_related("user", "organization").get(
            pk=membership.pk)
        if membership.is_suspended == (not active):
            return membership
        if not active:
            _keep_an_owner(membership, "The organization's last active owner cannot be deactivated.")
        membership.is_suspended = not active
        membership.save(update_fields=["is_suspended"])
        details: dict[str, Any] = _stop_access(membership) if not active else {}
        caller.record("scim.user_activated" if active else "scim.user_deactivated", target=membership,
                      target_name=membership.user.email, details=details)
    return membership


def delete_user(caller: Caller, membership: Membership) -> None:
    """The member leaves the organization (Entra deletes after its soft delete); the person's account, their
    runs and approvals stay."""
    with transaction.atomic():
        membership = Membership.objects.select_for_update().select_related("user", "organization").get(
            pk=membership.pk)
        _keep_an_owner(membership, "The organization's last active owner cannot be removed.")
        closed = sessions.close_member(membership, reason="deprovisioned")
        # The kernel's one removal: keys revoked, grants dropped (member_removed), the row deleted.
        kernel.drop_membership(membership, record=lambda revoked: caller.record(
            "scim.user_deleted", target=membership, target_name=membership.user.email,
            details={"api_keys_revoked": revoked, "sessions_closed": closed}))


# ------------------------------------------------------------------ groups and the roles they give


def _strongest(roles: list[str]) -> str:
    return max(roles, key=lambda r: (len(permissions_of(r)), r))


def apply_group_roles(caller: Caller, memberships: list[Membership]) -> None:
    """Each member's role follows the mapped groups they are in (the strongest), or the directory's default once
    they are in none — for members the IdP provisioned or placed in a mapped group. Owners keep their role."""
    directory = directory_of(caller.organization)
    org_id = caller.organization.pk
    for membership in memberships:
        if membership.role == Role.OWNER:
            continue
        names = list(membership.scim_groups.values_list("display_name", flat=True))
        roles = [directory.role_map[n] for n in names if n in directory.role_map]
        roles = [r for r in roles if r != Role.OWNER and role_exists(org_id, r)]
        if not roles and not ScimUser.objects.filter(membership=membership).exists():
            continue
        role = _strongest(roles) if roles else directory.default_role
        if role != membership.role:
            before = membership.role
            Membership.objects.filter(pk=membership.pk).update(role=role)
            caller.record("member.role_changed", target=membership, target_name=membership.user.email,
                          details={"from": before, "to": role, "via": "scim"})


def member_set(caller: Caller, ids: list[str]) -> list[Membership]:
    """The organization's memberships named by SCIM ids; an id of another organization's member, or none at all,
    refuses the request (nothing is written)."""
    found = {str(m.pk): m for m in Membership.objects.filter(
        organization=caller.organization, pk__in=[int(i) for i in ids if digits_only(str(i))]).select_related("user")}
    missing = [i for i in ids if str(i) not in found]
    if missing:
        raise ScimProblem(f"No member with id {missing[0][:40]!r}.", scim_type="invalidValue")
    return list(found.values())


def create_group(caller: Caller, display_name: str, external_id: str, member_ids: list[str]) -> ScimGroup:
    name = (display_name or "").strip()[:200]
    if not name:
        raise ScimProblem("displayName is required.")
    with transaction.atomic():
        members = member_set(caller, member_ids)
        if ScimGroup.objects.filter(organization=caller.organization, display_name=name).exists():
            raise ScimProblem("A group with this displayName exists.", status=409, scim_type="uniqueness")
        group = ScimGroup.objects.create(organization=caller.organization, display_name=name,
                                         external_id=(external_id or "")[:300])
        group.members.set(members)
        caller.record("scim.group_created", target=group, target_name=name, details={"members": len(members)})
        apply_group_roles(caller, members)
    return group


def change_group(caller: Caller, group: ScimGroup, *, display_name: str | None = None,
                 external_id: str | None = None, add: list[str] = (), remove: list[str] = (),  # type: ignore[assignment]
                 replace: list[str] | None = None) -> ScimGroup:
    with transaction.atomic():
        group = ScimGroup.objects.select_for_update().get(pk=group.pk)
        before = set(group.members.all())
        if display_name is not None and display_name.strip() and display_name.strip() != group.display_name:
            name = display_name.strip()[:200]
            if ScimGroup.objects.filter(organization=caller.organization, display_name=name).exclude(
                    pk=group.pk).exists():
                raise ScimProblem("A group with this displayName exists.", status=409, scim_type="uniqueness")
            group.display_name = name
        if external_id is not None:
            group.external_id = external_id[:300]
        after = set(member_set(caller, replace)) if replace is not None else set(before)
        after |= set(member_set(caller, list(add)))
        after -= set(member_set(caller, list(remove))) if remove else set()
        group.updated_at = timezone.now()
        group.save()
        group.members.set(after)
        caller.record("scim.group_updated", target=group, target_name=group.display_name,
                      details={"added": len(after - before), "removed": len(before - after)})
        # A rename can change what the group gives, so every member is looked at.
        apply_group_roles(caller, list(before | after))
    return group


def delete_group(caller: Caller, group: ScimGroup) -> None:
    with transaction.atomic():
        members = list(group.members.all())
        caller.record("scim.group_deleted", target=group, target_name=group.display_name)
        group.delete()
        apply_group_roles(caller, members)

