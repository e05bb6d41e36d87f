"""`Authorization: Bearer <api key>` for the REST API. Keys are stored as SHA-256 hashes.

A key is refused once expired (401, its own code) and, past its scope, for a write (403): the scope is
checked here, where every key request passes (the REST views and interop's OpenAI, A2A and MCP endpoints),
against the permission the view declares for the method (`OrgAPIView.permission_map`)."""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone
from rest_framework import authentication, exceptions

from agenticos.errors import Forbidden
from agenticos.models import ApiKey
from agenticos.permissions import scope_allows

KEY_PREFIX = "aos_"
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


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode(errors="replace")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme != self.keyword:
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
        method = (getattr(request, "method", None) or "GET").upper()
        needed = _declared_permission(request, method)
        if not scope_allows(api_key.scope, method, needed):
            raise Forbidden(
                f"This API key's scope ({api_key.get_scope_display().lower()}) does not allow this.",
                code="insufficient_scope", details={"scope": api_key.scope, "permission": needed},
            )
        if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > TOUCH_EVERY_SECONDS:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        return (api_key.user, api_key)

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


def _declared_permission(request, method: str) -> str | None:
    """The permission the DRF view serving `request` declares for `method` (None when it declares none);
    outside DRF (interop) every write runs an agent."""
    parser_context = getattr(request, "parser_context", None)
    if parser_context is None:
        return INTEROP_PERMISSION
    permission_map = getattr(parser_context.get("view"), "permission_map", None) or {}
    return permission_map.get(method) or permission_map.get("*")
