"""`Authorization: Bearer <api key>`: the one door every API key passes, whatever the surface. Keys are stored
as SHA-256 hashes.

`admit_key` is that door: a missing, revoked or expired key is refused (401), and a key is held to its scope
(403) for the request's method against the permission the surface declares for it. The REST views reach it
through `ApiKeyAuthentication` (DRF), their permission from `OrgAPIView.permission_map`; interop's Chat
Completions, MCP and A2A endpoints through interop.service.actor_for, every write of theirs running an agent
(`INTEROP_PERMISSION`). The method is a required argument, never a default: a surface that does not say what
it is doing is not given a read's pass (A2A's JSON-RPC posts once were, as a method-less request).
tests/security/test_key_scopes_every_surface.py finds every route that looks a key up and attacks it."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions

from agenticos.errors import Forbidden
from agenticos.models import ApiKey
from agenticos.permissions import scope_allows

KEY_PREFIX = "aos_"
KEYWORD = "Bearer"
# Interop's endpoints (chat completions, A2A, MCP) are not DRF views: each of their writes runs an agent.
INTEROP_PERMISSION = "agents:run"
# last_used_at is written at most this often per key: a hot key should not write on every request.
TOUCH_EVERY_SECONDS = 60


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def generate_key() -> tuple[str, str]:
    """Returns (raw key, visible prefix)."""
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    return raw, raw[: len(KEY_PREFIX) + 6]


def key_from_raw(raw: str) -> ApiKey | None:
    return (
        ApiKey.objects.select_related("user", "organization")
        .filter(key_hash=hash_key(raw), revoked_at__isnull=True, user__is_active=True)
        .first()
    )


def admit_key(authorization: str | bytes, *, method: str, permission: str | None) -> tuple[Any, ApiKey] | None:
    """(user, key) for an `Authorization` header that carries a platform API key allowed to make a `method`
    request to a surface that needs `permission` for it; None when the header carries no Bearer credential
    (another authentication may apply). Raises AuthenticationFailed (401) for an empty, unknown, revoked or
    expired key and Forbidden (403, `insufficient_scope`) past the key's scope."""
    header = authorization.decode(errors="replace") if isinstance(authorization, bytes) else authorization
    scheme, _, raw = header.partition(" ")
    if not header or scheme != KEYWORD:
        return None
    raw = raw.strip()
    if not raw:
        raise exceptions.AuthenticationFailed("Empty API key.")
    api_key = key_from_raw(raw)
    if api_key is None:
        raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
    now = timezone.now()
    if api_key.expires_at is not None and api_key.expires_at <= now:
        raise exceptions.AuthenticationFailed(
            f"This API key expired on {api_key.expires_at:%Y-%m-%d %H:%M} UTC.", code="api_key_expired")
    if not scope_allows(api_key.scope, method, permission):
        raise Forbidden(
            f"This API key's scope ({api_key.get_scope_display().lower()}) does not allow this.",
            code="insufficient_scope", details={"scope": api_key.scope, "permission": permission},
        )
    if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > TOUCH_EVERY_SECONDS:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return (api_key.user, api_key)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """The REST API's door: `admit_key` with the method DRF is serving and the permission its view declares."""

    keyword = KEYWORD

    def authenticate(self, request):
        return admit_key(authentication.get_authorization_header(request), method=request.method,
                         permission=_declared_permission(request, request.method))

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


def _declared_permission(request, method: str) -> str | None:
    """The permission the DRF view serving `request` declares for `method` (None when it declares none)."""
    view = (getattr(request, "parser_context", None) or {}).get("view")
    permission_map = getattr(view, "permission_map", None) or {}
    return permission_map.get(method.upper()) or permission_map.get("*")
