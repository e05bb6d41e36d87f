"""One request → one organization. Every org-scoped read goes through `Actor` and `org_get`.

Session requests use the session's current organization (or the person's first one); API calls
may name it with X-Organization-Id; an API key is bound to its own organization. Not a member → 404,
so an outsider cannot learn that an organization exists.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from django.core.exceptions import MultipleObjectsReturned, ObjectDoesNotExist, ValidationError
from django.db import models

from agenticos.errors import Forbidden, NotFound
from agenticos.models import ApiKey, Membership, Organization
from agenticos.permissions import PERMISSIONS, permissions_of

if TYPE_CHECKING:
    from agenticos.models import User

SESSION_KEY = "current_organization_id"
HEADER = "HTTP_X_ORGANIZATION_ID"

M = TypeVar("M", bound=models.Model)


@dataclass
class Actor:
    """Who is acting, in which organization, with which role (and through which API key, if any)."""

    user: User | None
    organization: Organization
    role: str | None
    api_key: ApiKey | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The role's permissions, read once per actor (a custom role's come from the database).
    _permissions: frozenset[str] | None = field(default=None, repr=False, compare=False)

    def has(self, permission: str) -> bool:
        if permission not in PERMISSIONS:
            raise KeyError(f"unknown permission {permission!r}")
        if self._permissions is None:
            self._permissions = permissions_of(self.role, self.organization.pk)
        return permission in self._permissions

    def require(self, permission: str) -> None:
        if not self.has(permission):
            raise Forbidden(
                "Your role does not allow this.", details={"permission": permission, "role": self.role}
            )

    @property
    def user_id(self):
        return self.user.pk if self.user else None


def sees_deployment_settings(actor: Actor | None) -> bool:
    """Whether refusals may tell `actor` which deployment setting to change (`MODEL_ALLOWED_PRIVATE_HOSTS`…).

    The names of the operator's settings say how the deployment is run; a member has no use for them and nothing to
    set, so they see a plain refusal. The organization's owners and admins (who run a self-hosted deployment or ask
    whoever does) and the deployment's staff see the exact entry to add."""
    if actor is None:
        return False
    if actor.user is not None and (actor.user.is_staff or actor.user.is_superuser):
        return True
    return actor.has("organization:manage")


def parse_uuid(value: str | None) -> uuid.UUID | None:
    """The UUID `value` spells, or None (empty, malformed): ids from requests and rows, never an exception."""
    if not value:
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


# A browser session may be closed for one organization while it stays open for the person's others (an owner
# signed a member out, SCIM deprovisioned them, the organization came to require SSO). The sign-in app registers
# a gate (`register_session_gate`): given a session key, a condition on Membership rows, folded into the one
# membership query below, so admitting a session costs no extra query.
_session_gates: list[Callable[[str], Any]] = []


def register_session_gate(gate: Callable[[str], Any]) -> None:
    if gate not in _session_gates:
        _session_gates.append(gate)


def _open_to_session(qs: models.QuerySet[Membership], session_key: str | None) -> models.QuerySet[Membership]:
    if session_key:
        for gate in _session_gates:
            qs = qs.filter(gate(session_key))
    return qs


def membership_for(user, organization_id, *, session_key: str | None = None) -> Membership | None:
    """The person's active membership of the organization; with `session_key`, only if that browser session
    is still open for it."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    org_uuid = parse_uuid(organization_id)
    if org_uuid is None:
        return None
    qs = Membership.objects.select_related("organization", "user").filter(
        user=user, organization_id=org_uuid, is_suspended=False, user__is_active=True)
    return _open_to_session(qs, session_key).first()


def actor_for_membership(membership: Membership, api_key: ApiKey | None = None) -> Actor:
    return Actor(user=membership.user, organization=membership.organization, role=membership.role, api_key=api_key)


def resolve_actor(request, *, user, api_key: ApiKey | None = None, header_org: str | None = None,
                  session_key: str | None = None) -> Actor:
    """The organization a request acts in. Raises NotFound when the caller is not a member (or the browser
    session was closed for that organization). `session_key` is for callers without a request (sockets)."""
    if api_key is not None:
        if header_org and parse_uuid(header_org) != api_key.organization_id:
            raise NotFound("Organization not found.")
        membership = membership_for(user, api_key.organization_id)
        if membership is None:
            raise NotFound("Organization not found.")
        return actor_for_membership(membership, api_key)
    if request is not None and hasattr(request, "session"):
        session_key = session_key or request.session.session_key
    if header_org:
        membership = membership_for(user, header_org, session_key=session_key)
    else:
        remembered = request.session.get(SESSION_KEY) if request is not None and hasattr(request, "session") else None
        membership = membership_for(user, remembered, session_key=session_key) if remembered else None
        if membership is None:  # none remembered, or it left or closed for this session: the person's first open one
            first = _open_to_session(Membership.objects.filter(user=user, is_suspended=False), session_key).order_by(
                "created_at").values("organization_id").first()
            membership = membership_for(user, first["organization_id"], session_key=session_key) if first else None
    if membership is None:
        raise NotFound("Organization not found.")
    return actor_for_membership(membership)


def org_queryset(actor: Actor, model: type[M]) -> models.QuerySet[M]:
    return model._default_manager.filter(organization=actor.organization)


def org_get(actor: Actor, model: type[M], pk: Any, queryset: models.QuerySet[M] | None = None) -> M:
    """Load one object of the actor's organization, or 404 — whether it is foreign or missing."""
    qs = queryset if queryset is not None else org_queryset(actor, model)
    try:
        return qs.get(pk=pk)
    except MultipleObjectsReturned:
        raise
    except (ObjectDoesNotExist, ValueError, TypeError, ValidationError):  # a malformed uuid is a ValidationError
        raise NotFound(f"{str(model._meta.verbose_name).capitalize()} not found.") from None


class CurrentOrganizationMiddleware:
    """Attaches `request.actor` for signed-in console requests (None otherwise)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.actor = None
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and not request.path.startswith("/api/"):
            try:
                request.actor = resolve_actor(request, user=user)
                request.session[SESSION_KEY] = str(request.actor.organization.pk)
            except NotFound:
                request.actor = None
        return self.get_response(request)


def organization_context(request) -> dict:
    actor = getattr(request, "actor", None)
    if actor is None:
        return {}
    memberships = Membership.objects.filter(user=actor.user, is_suspended=False).select_related("organization")
    return {"actor": actor, "current_organization": actor.organization, "my_memberships": memberships}
