"""Per-minute counters in the deployment's Redis, so a limit holds across every worker and consumer.

A fixed one-minute window per (bucket, identity): INCR then EXPIRE in one round trip.
"""

from __future__ import annotations

import time
from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


def client() -> redis.Redis:
    return _client(settings.REDIS_URL)


def hit(bucket: str, identity: str, limit: int, *, window: int = 60) -> tuple[bool, int]:
    """Count one event. Returns (allowed, seconds until the window resets)."""
    now = int(time.time())
    slot = now // window
    key = f"agenticos:rl:{bucket}:{identity}:{slot}"
    pipe = client().pipeline()
    pipe.incr(key)
    pipe.expire(key, window + 5)
    count, _ = pipe.execute()
    retry_after = window - (now % window)
    return int(count) <= limit, retry_after


def client_address(scope_or_meta_client: str | None, forwarded_for: str | None) -> str:
    """The caller's address. Behind a proxy every visitor arrives as the proxy unless
    EMBED_TRUST_X_FORWARDED_FOR says to read the first hop the proxy recorded."""
    if forwarded_for and getattr(settings, "EMBED_TRUST_X_FORWARDED_FOR", False):
        first = forwarded_for.split(",")[0].strip()
        if first:
            return first
    return scope_or_meta_client or "unknown"
