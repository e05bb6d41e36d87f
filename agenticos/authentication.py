"""`Authorization: Bearer <api key>` for the REST API. Keys are stored as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone
from rest_framework import authentication, exceptions

from agenticos.models import ApiKey

KEY_PREFIX = "aos_"


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
        # Touch at most once a minute: a hot key should not write on every request.
        if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        return (api_key.user, api_key)

    def authenticate_header(self, request):
        return 'Bearer realm="api"'
