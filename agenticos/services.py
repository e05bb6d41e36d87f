"""Kernel state changes: organizations, members and invitations, API keys, secrets.

Every function takes a keyword-only `actor=`, runs in one transaction and writes its audit row there.
Side effects (email) happen after commit.
"""

from __future__ import annotations

import hashlib
import secrets as pysecrets
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, models, transaction
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from agenticos import audit, secret_formats, session_sockets, vault
from agenticos.authentication import generate_key, hash_key
from agenticos.errors import Conflict, Forbidden, Invalid, NotFound
from agenticos.models import ApiKey, Invitation, Membership, Organization, Secret, SecretKind, User
from agenticos.money import MAX_MONTHLY_USD
from agenticos.permissions import KeyScope, Role, outranks, role_exists
from agenticos.signals import member_removed

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

INVITATION_TTL = timedelta(days=7)


def _record(actor: Actor, action: str, target=None, **kwargs) -> None:
    details = kwargs.pop("details", None) or {}
    if actor.api_key is not None:
        details = {**details, "api_key": actor.api_key.prefix}
    audit.record(
        actor=actor.user,
        organization=actor.organization,
        action=action,
        target=target,
        details=details,
        ip_address=actor.extra.get("ip"),
        **kwargs,
    )


def problem(field: str, message: str) -> dict[str, str]:
    return {"field": field, "message": message}


def invalid(message: str, *problems: dict[str, str]) -> Invalid:
    return Invalid(message, details={"problems": list(problems)})


# ------------------------------------------------------------------ organizations


def _unique_org_slug(name: str) -> str:
    base = slugify(name)[:70] or "org"
    slug, n = base, 1
    while Organization.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def create_organization(*, actor: User, name: str, slug: str | None = None) -> Organization:
    """A new organization with `actor` as its owner."""
    name = (name or "").strip()
    if not name:
        raise invalid("An organization needs a name.", problem("name", "This field is required."))
    with transaction.atomic():
        if slug and Organization.objects.filter(slug=slug).exists():
            raise Conflict("An organization with this slug already exists.", details={"field": "slug"})
        org = Organization.objects.create(name=name, slug=slug or _unique_org_slug(name))
        Membership.objects.create(organization=org, user=actor, role=Role.OWNER)
        audit.record(actor=actor, organization=org, action="organization.created", target=org)
    return org


# ------------------------------------------------------------------ members


def _check_can_manage(actor: Actor, membership: Membership) -> None:
    """Nobody changes someone who outranks them. Raises NotFound for a foreign membership."""
    if membership.organization_id != actor.organization.pk:
        raise NotFound("Member not found.")
    actor.require("members:manage")
    if actor.role is None or outranks(membership.role, actor.role):
        raise Forbidden("You cannot change a member who outranks you.", details={"role": membership.role})


def _check_assignable(actor: Actor, role: str) -> None:
    if not isinstance(role, str) or not role_exists(actor.organization.pk, role):
        raise invalid("Unknown role.", problem("role", f"Must be one of {list(Role.values)} or a custom role of "
                                                       "this organization."))
    if actor.role is None or outranks(role, actor.role):
        raise Forbidden("You cannot give a role above your own.", details={"role": role})


def keep_an_owner(organization: Organization, losing: Membership) -> None:
    """An organization always keeps one active owner. Locks the owner rows to serialize concurrent changes."""
    if losing.role != Role.OWNER or losing.is_suspended:
        return
    owners = list(
        Membership.objects.select_for_update()
        .filter(organization=organization, role=Role.OWNER, is_suspended=False)
        .values_list("pk", flat=True)
    )
    if [pk for pk in owners if pk != losing.pk] == []:
        raise Conflict("An organization must keep at least one owner.", code="last_owner")


def _hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def invite_member(*, actor: Actor, email: str, role: str = Role.MEMBER) -> tuple[Invitation, str]:
    """Create an invitation and email its link. Returns (invitation, raw token); only the hash is stored."""
    actor.require("members:manage")
    _check_assignable(actor, role)
    email = (email or "").strip().lower()
    if not email or "@" not in email:
        raise invalid("The email address is invalid.", problem("email", "Enter a valid email address."))
    if Membership.objects.filter(organization=actor.organization, user__email__iexact=email).exists():
        raise Conflict("This person is already a member.", details={"field": "email"})
    raw = pysecrets.token_urlsafe(32)
    with transaction.atomic():
        invitation = Invitation.objects.create(
            organization=actor.organization,
            email=email,
            role=role,
            token_hash=_hash_token(raw),
            invited_by=actor.user,
        )
        _record(actor, "member.invited", target_type="invitation", target_id=str(invitation.pk),
                target_name=email, details={"role": role})
        org_name = actor.organization.name
        link = f"{settings.FRONTEND_URL}/invitations/{raw}"
        transaction.on_commit(
            lambda: send_mail(
                subject=f"You are invited to {org_name} on AgenticOS",
                message=f"Join {org_name} as {role}: {link}\nThe link is valid for {INVITATION_TTL.days} days.",
                from_email=None,
                recipient_list=[email],
                fail_silently=True,
            )
        )
    return invitation, raw


def revoke_invitation(*, actor: Actor, invitation: Invitation) -> None:
    actor.require("members:manage")
    if invitation.organization_id != actor.organization.pk or invitation.accepted_at is not None:
        raise NotFound("Invitation not found.")
    with transaction.atomic():
        _record(actor, "member.invitation_revoked", target_type="invitation", target_id=str(invitation.pk),
                target_name=invitation.email)
        invitation.delete()


def accept_invitation(*, actor: User, token: str) -> Membership:
    """`actor` (signed in, with the invited email) joins the organization. Unknown/expired/foreign → NotFound."""
    with transaction.atomic():
        invitation = (
            Invitation.objects.select_for_update()
            .select_related("organization")
            .filter(token_hash=_hash_token(token or ""), accepted_at__isnull=True)
            .first()
        )
        if (
            invitation is None
            or invitation.email.lower() != actor.email.lower()
            or invitation.created_at < timezone.now() - INVITATION_TTL
        ):
            raise NotFound("Invitation not found or expired.")
        membership, created = Membership.objects.get_or_create(
            organization=invitation.organization, user=actor, defaults={"role": invitation.role}
        )
        invitation.accepted_at = timezone.now()
        invitation.save(update_fields=["accepted_at"])
        audit.record(
            actor=actor,
            organization=invitation.organization,
            action="member.joined",
            target=membership,
            target_name=actor.email,
            details={"role": membership.role, "already_member": not created},
        )
    return membership


def change_member_role(*, actor: Actor, membership: Membership, role: str) -> Membership:
    _check_can_manage(actor, membership)
    _check_assignable(actor, role)
    with transaction.atomic():
        membership = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
        before = membership.role
        if before == role:
            return membership
        if role != Role.OWNER:
            keep_an_owner(actor.organization, membership)
        membership.role = role
        membership.save(update_fields=["role"])
        _record(actor, "member.role_changed", target=membership, target_name=membership.user.email,
                details={"from": before, "to": role})
    return membership


def set_member_suspended(*, actor: Actor, membership: Membership, suspended: bool) -> Membership:
    _check_can_manage(actor, membership)
    if membership.user_id == actor.user_id and suspended:
        raise Forbidden("You cannot suspend yourself.")
    with transaction.atomic():
        membership = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
        if membership.is_suspended == suspended:
            return membership
        if suspended:
            keep_an_owner(actor.organization, membership)
        membership.is_suspended = suspended
        membership.save(update_fields=["is_suspended"])
        if suspended:  # their open sockets in this organization close with the commit
            session_sockets.end_sockets(user_id=membership.user_id, organization_id=membership.organization_id)
        _record(actor, "member.suspended" if suspended else "member.reinstated", target=membership,
                target_name=membership.user.email)
    return membership


def remove_member(*, actor: Actor, membership: Membership) -> None:
    """Remove someone (or leave, when it is yourself). Their API keys in this organization are revoked, and
    what they held in it (grants) is dropped by the apps that hold it (`signals.member_removed`)."""
    if membership.user_id != actor.user_id:
        _check_can_manage(actor, membership)
    elif membership.organization_id != actor.organization.pk:
        raise NotFound("Member not found.")
    with transaction.atomic():
        membership = Membership.objects.select_for_update().select_related("user", "organization").get(
            pk=membership.pk)
        drop_membership(membership, record=lambda revoked: _record(
            actor, "member.removed", target=membership, target_name=membership.user.email,
            details={"role": membership.role}))


def drop_membership(membership: Membership, *, record: Callable[[int], None]) -> None:
    """The one way a membership ends (the console, the API, SCIM), in the caller's transaction with the row
    locked: the organization keeps an owner, the person's API keys there are revoked, what they held there is
    dropped by the apps that hold it (`member_removed`), `record(keys revoked)` audits it, then the row goes."""
    organization = membership.organization
    keep_an_owner(organization, membership)
    revoked = ApiKey.objects.filter(
        organization=organization, user_id=membership.user_id, revoked_at__isnull=True
    ).update(revoked_at=timezone.now())
    member_removed.send(sender=Organization, organization=organization, user_id=membership.user_id)
    session_sockets.end_sockets(user_id=membership.user_id, organization_id=organization.pk)
    record(revoked)
    membership.delete()


# ------------------------------------------------------------------ API keys


def create_api_key(
    *, actor: Actor, name: str, scope: str = KeyScope.ADMIN, expires_at: datetime | None = None
) -> tuple[ApiKey, str]:
    """A key acting with the actor's rights in the actor's organization, limited to `scope` (read, run,
    admin) and refused after `expires_at` (None: never). The raw key is returned once."""
    actor.require("apikeys:manage")
    if actor.user is None:
        raise Forbidden("API keys belong to a person.")
    if actor.api_key is not None and actor.api_key.scope != KeyScope.ADMIN:
        # A limited key must not mint itself a wider one.
        raise Forbidden("Only a key with the admin scope may create keys.")
    name = (name or "").strip()
    if not name:
        raise invalid("An API key needs a name.", problem("name", "This field is required."))
    if scope not in KeyScope.values:
        raise invalid("Unknown scope.", problem("scope", f"Choose one of: {', '.join(KeyScope.values)}."))
    if expires_at is not None and expires_at <= timezone.now():
        raise invalid("The expiry is in the past.", problem("expires_at", "Choose a moment in the future."))
    raw, prefix = generate_key()
    with transaction.atomic():
        key = ApiKey.objects.create(
            organization=actor.organization, user=actor.user, name=name[:100], prefix=prefix, key_hash=hash_key(raw),
            scope=scope, expires_at=expires_at,
        )
        _record(actor, "api_key.created", target=key, details={
            "prefix": prefix, "scope": scope, "expires_at": expires_at.isoformat() if expires_at else None})
    return key, raw


def api_keys_for(actor: Actor) -> models.QuerySet[ApiKey]:
    """The actor's own keys; people who manage members see everyone's."""
    qs = ApiKey.objects.filter(organization=actor.organization).select_related("user")
    return qs if actor.has("members:manage") else qs.filter(user_id=actor.user_id)


def search_api_keys(qs: models.QuerySet[ApiKey], text: str) -> models.QuerySet[ApiKey]:
    """Keys whose name, visible prefix or owner's email contains `text` (the console's and the API's search)."""
    text = (text or "").strip()[:100]
    if not text:
        return qs
    return qs.filter(models.Q(name__icontains=text) | models.Q(prefix__icontains=text)
                     | models.Q(user__email__icontains=text))


def revoke_api_key(*, actor: Actor, api_key: ApiKey) -> ApiKey:
    if api_key.organization_id != actor.organization.pk or not api_keys_for(actor).filter(pk=api_key.pk).exists():
        raise NotFound("API key not found.")
    with transaction.atomic():
        if api_key.revoked_at is None:
            api_key.revoked_at = timezone.now()
            api_key.save(update_fields=["revoked_at"])
            _record(actor, "api_key.revoked", target=api_key, details={"prefix": api_key.prefix})
    return api_key


# ------------------------------------------------------------------ secrets


def _check_secret_value(value: str, kind: str = "") -> None:
    if not isinstance(value, str) or not value:
        raise invalid("A secret needs a value.", problem("value", "This field is required."))
    wrong = secret_formats.problem(kind, value)
    if wrong:
        raise invalid("The secret is invalid.", problem("value", wrong))


def _hint(kind: str, value: str) -> str:
    # The end of a sign-in file is JSON punctuation, not something that tells two secrets apart.
    return "" if kind == SecretKind.CODEX_CHATGPT else vault.hint_for(value)


def create_secret(
    *, actor: Actor, name: str, value: str, kind: str = SecretKind.API_KEY, description: str = ""
) -> Secret:
    actor.require("secrets:manage")
    name = (name or "").strip()
    problems = []
    if not name:
        problems.append(problem("name", "This field is required."))
    if kind not in SecretKind.values:
        problems.append(problem("kind", f"Must be one of {list(SecretKind.values)}."))
    if not isinstance(value, str) or not value:
        problems.append(problem("value", "This field is required."))
    elif kind in SecretKind.values and (wrong := secret_formats.problem(kind, value)):
        problems.append(problem("value", wrong))
    if problems:
        raise invalid("The secret is invalid.", *problems)
    return seal_secret(actor=actor, name=name, value=value, kind=kind, description=description)


def seal_secret(*, actor: Actor, name: str, value: str, kind: str = SecretKind.API_KEY,
                description: str = "") -> Secret:
    """Seal `value` in the vault as a secret of the actor's organization, audited. No permission of its own: the
    caller decides (create_secret needs secrets:manage; a model profile's form seals the key it is typed with
    under models:manage)."""
    sealed = vault.seal(actor.organization.pk, value)
    try:
        with transaction.atomic():
            secret = Secret.objects.create(
                organization=actor.organization,
                name=name[:120],
                kind=kind,
                description=description[:300],
                hint=_hint(kind, value),
                key_version=sealed.key_version,
                wrapped_key=sealed.wrapped_key,
                ciphertext=sealed.ciphertext,
                created_by=actor.user,
            )
            _record(actor, "secret.created", target=secret, details={"kind": kind})
    except IntegrityError:
        raise Conflict("A secret with this name already exists.", details={"field": "name"}) from None
    return secret


# ------------------------------------------------------------------ secrets the deployment keeps for itself
#
# Some vault rows are the deployment's own, sealed per organization (the sandbox service's token): never offered in a
# credential picker, never deleted or rotated from Settings → Secrets. The apps that keep them say which
# (`register_reserved_secrets` in their ready()); the kernel names no app.

_reserved_sources: list[Callable[[object], models.QuerySet]] = []
# Kinds a credential picker never offers unless the field asks for them: an embed's JWT secret only verifies visitor
# tokens; sent to a model provider or a tool it would leak the key that signs people in.
# A Codex ChatGPT sign-in is a person's subscription: only the coding agent's picker asks for it by kind.
_PICKER_EXCLUDED_KINDS = frozenset({SecretKind.JWT_SECRET, SecretKind.CODEX_CHATGPT})


def register_reserved_secrets(source: Callable[[object], models.QuerySet]) -> None:
    """`source(organization_id)`: a queryset of the ids of that organization's secrets the deployment keeps."""
    if source not in _reserved_sources:
        _reserved_sources.append(source)


def reserved_secret_ids(organization_id: object) -> set[object]:
    return {pk for source in _reserved_sources for pk in source(organization_id)}


def pickable_secrets(actor: Actor, *, kinds: tuple[str, ...] | None = None) -> models.QuerySet[Secret]:
    """The secrets a credential picker offers `actor`: of `kinds` (default: every kind but JWT secrets), never one the
    deployment keeps for itself, never for a role that cannot see secrets. Values stay sealed (deferred)."""
    if not actor.has("secrets:view"):
        return Secret.objects.none()
    rows = Secret.objects.filter(organization=actor.organization).defer("wrapped_key", "ciphertext")
    rows = rows.filter(kind__in=kinds) if kinds is not None else rows.exclude(kind__in=_PICKER_EXCLUDED_KINDS)
    for source in _reserved_sources:
        rows = rows.exclude(pk__in=source(actor.organization.pk))
    return rows.order_by("name")


def _refuse_reserved(secret: Secret) -> None:
    if secret.pk in reserved_secret_ids(secret.organization_id):
        raise Conflict("This secret belongs to the deployment (its sandbox service); it is managed there, not here.",
                       details={"field": "secret"}, code="managed_by_deployment")


def rotate_secret(*, actor: Actor, secret: Secret, value: str) -> Secret:
    actor.require("secrets:manage")
    if secret.organization_id != actor.organization.pk:
        raise NotFound("Secret not found.")
    _refuse_reserved(secret)
    _check_secret_value(value, secret.kind)
    sealed = vault.seal(actor.organization.pk, value)
    with transaction.atomic():
        secret.hint = _hint(secret.kind, value)
        secret.key_version = sealed.key_version
        secret.wrapped_key = sealed.wrapped_key
        secret.ciphertext = sealed.ciphertext
        secret.rotated_at = timezone.now()
        secret.save(update_fields=["hint", "key_version", "wrapped_key", "ciphertext", "rotated_at"])
        _record(actor, "secret.rotated", target=secret)
    return secret


def reseal_refreshed_secret(*, organization_id: Any, secret_id: Any, value: str, user_id: Any = None,
                            run_id: Any = None) -> bool:
    """Seal again a secret its own user changed while using it — Codex rewrote its ChatGPT sign-in after trading the
    refresh token for new tokens, and the old refresh token may now be revoked — so the next use opens the new one.
    Runtime code only (the coding agent at a task's end): no permission of its own, the run that used the secret
    already had it. The row is locked; a value that is no longer the same kind's shape is refused (the file a task
    left must still be a sign-in). Audited as `secret.refreshed` (the run, never the value). Returns whether the
    row changed."""
    with transaction.atomic():
        secret = Secret.objects.select_for_update().filter(pk=secret_id, organization_id=organization_id).first()
        if secret is None or secret_formats.problem(secret.kind, value):
            return False
        if vault.open_sealed(secret.organization_id, secret.key_version, bytes(secret.wrapped_key),
                             bytes(secret.ciphertext)) == value:
            return False
        sealed = vault.seal(organization_id, value)
        secret.hint = _hint(secret.kind, value)
        secret.key_version, secret.wrapped_key, secret.ciphertext = (sealed.key_version, sealed.wrapped_key,
                                                                     sealed.ciphertext)
        secret.rotated_at = timezone.now()
        secret.save(update_fields=["hint", "key_version", "wrapped_key", "ciphertext", "rotated_at"])
        user = User.objects.filter(pk=user_id).first() if user_id else None
        audit.record(actor=user, organization=secret.organization, action="secret.refreshed", target=secret,
                     details={"kind": secret.kind, **({"run": str(run_id)} if run_id else {})})
    return True


def delete_secret(*, actor: Actor, secret: Secret) -> None:
    actor.require("secrets:manage")
    if secret.organization_id != actor.organization.pk:
        raise NotFound("Secret not found.")
    _refuse_reserved(secret)
    try:
        with transaction.atomic():
            _record(actor, "secret.deleted", target=secret)
            secret.delete()
    except models.ProtectedError:
        raise Conflict(
            "This secret is used by a model profile; point the profile elsewhere first.",
            details={"field": "secret"},
            code="in_use",
        ) from None


# ------------------------------------------------------------------ organization budget, own profile


def set_organization_budget(*, actor: Actor, monthly_usd: str) -> Organization:
    actor.require("budgets:manage")
    text = (monthly_usd or "").strip()
    try:
        value = Decimal(text) if text else None
    except InvalidOperation:
        value = Decimal(-1)
    # is_finite first: comparing a NaN Decimal raises.
    if value is not None and (not value.is_finite() or value < 0 or value > MAX_MONTHLY_USD):
        raise Invalid(_("Enter an amount of zero or more, or leave it empty for no cap."),
                      details={"problems": [{"field": "monthly_usd", "message": _("Must be zero or more.")}]})
    with transaction.atomic():
        org = Organization.objects.select_for_update().get(pk=actor.organization.pk)
        before = org.monthly_budget_usd
        org.monthly_budget_usd = value
        org.save(update_fields=["monthly_budget_usd"])
        audit.record(actor=actor.user, organization=org, action="organization.budget_changed", target=org,
                     details={"from": None if before is None else str(before),
                              "to": None if value is None else str(value)})
    actor.organization.monthly_budget_usd = value
    return org


def update_profile(*, actor: Actor, display_name: str) -> None:
    """A person edits their own display name (no organization permission needed: it is their account)."""
    user = actor.user
    if user is None:
        return
    with transaction.atomic():
        user.display_name = (display_name or "").strip()[:150]
        user.save(update_fields=["display_name"])
        audit.record(actor=user, organization=actor.organization, action="user.profile_updated", target=user,
                     target_name=user.email)


THEMES = ("", "light", "dark")


def set_theme(*, user: User, theme: str) -> None:
    """A person's console theme, remembered for them (not audited: a display preference, like the language)."""
    if theme not in THEMES:
        raise Invalid("The theme is light, dark, or empty to follow the system.", details={"field": "theme"})
    if user.theme != theme:
        user.theme = theme
        user.save(update_fields=["theme"])


def set_organization_logo(*, actor: Actor, data: bytes | None) -> Organization:
    """The organization's logo (organization:manage): PNG/JPEG/WebP/GIF by sniffed type, ≤ 2 MB; None removes it."""
    from agenticos import images

    actor.require("organization:manage")
    organization = actor.organization
    with transaction.atomic():
        path = images.replace(organization, "logo_path", data,
                              lambda ext: f"organizations/{organization.pk}/logo.{ext}", what="logo")
        _record(actor, "organization.logo_set" if path else "organization.logo_removed", target=organization,
                details={"bytes": len(data)} if data is not None else {})
    return organization
