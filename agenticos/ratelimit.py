"""Per-minute counters in the deployment's Redis, so a limit holds across every worker and consumer.

A fixed one-minute window per (bucket, identity): INCR then EXPIRE in one round trip.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


# Where a window's start is read from. Tests drive it (tests/conftest.py `ratelimit_clock`) so a run of hits
# never straddles a window boundary by chance of the wall clock.
clock: Callable[[], float] = time.time


def client() -> redis.Redis:
    return _client(settings.REDIS_URL)


def redis_name(*parts: object) -> str:
    """A key or pub/sub channel name in this deployment's Redis namespace (REDIS_NAMESPACE): a database
    number separates keys but not pub/sub channels, so a name shared by two deployments — or two parallel
    test workers — on one Redis needs the namespace in it."""
    return ":".join([settings.REDIS_NAMESPACE, *(str(part) for part in parts)])


def hit(bucket: str, identity: str, limit: int, *, window: int = 60) -> tuple[bool, int]:
    """Count one event. Returns (allowed, seconds until the window resets)."""
    now = int(clock())
    slot = now // window
    key = redis_name("rl", bucket, identity, slot)
    pipe = client().pipeline()
    pipe.incr(key)
    pipe.expire(key, window + 5)
    count, _ = pipe.execute()
    retry_after = window - (now % window)
    return int(count) <= limit, retry_after


def hit_all(counters: list[tuple[str, str, int]], *, window: int = 60) -> tuple[bool, int]:
    """Count one event in each (bucket, identity, limit) counter, in one round trip. Allowed only when every
    counter allows it — for identities a caller can vary (an address, a key the browser mints), so varying
    one does not escape the other. Returns (allowed, seconds until the window resets)."""
    now = int(clock())
    slot = now // window
    pipe = client().pipeline()
    for bucket, identity, _ in counters:
        key = redis_name("rl", bucket, identity, slot)
        pipe.incr(key)
        pipe.expire(key, window + 5)
    results = pipe.execute()
    counts = results[0::2]
    allowed = all(int(count) <= limit for count, (_, _, limit) in zip(counts, counters, strict=True))
    return allowed, window - (now % window)


def hit_then_share(own: list[tuple[str, str, int]], shared: tuple[str, str, int], *,
                   window: int = 60) -> tuple[bool, int]:
    """A caller's own counters first, then a shared ceiling — spent only by what its own counters let
    through, so one caller refused by their own limit cannot use up everybody's share."""
    allowed, retry = hit_all(own, window=window)
    if not allowed:
        return allowed, retry
    return hit(*shared, window=window)


def client_address(scope_or_meta_client: str | None, forwarded_for: str | None) -> str:
    """The caller's address. Behind a proxy every visitor arrives as the proxy unless
    EMBED_TRUST_X_FORWARDED_FOR says to read the first hop the proxy recorded."""
    if forwarded_for and getattr(settings, "EMBED_TRUST_X_FORWARDED_FOR", False):
        first = forwarded_for.split(",")[0].strip()
        if first:
            return first
    return scope_or_meta_client or "unknown"
