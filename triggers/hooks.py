"""The event webhook's checks, in the order they are made; each refusal runs nothing.

    POST /api/v1/hooks/<key>
    X-AgenticOS-Timestamp: <unix seconds>
    X-AgenticOS-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>

unknown key 404 · body over TRIGGER_WEBHOOK_MAX_BYTES 413 · over the per-trigger rate 429 · missing or
wrong signature 401 · timestamp more than TRIGGER_SIGNATURE_TOLERANCE_SECONDS off 401 · paused 423 ·
the same signature again within the window 409 (replay, remembered in Redis) · then 202 {"run_id"}.
An `Idempotency-Key` header makes a repeat within 24 h answer the first run's id without a new run.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass

from django.conf import settings

from agenticos import ratelimit
from agenticos.errors import DomainError, NotFound, RateLimited
from triggers.models import Trigger

IDEMPOTENCY_SECONDS = 24 * 3600
MAX_HEADER = 200


class Unauthorized(DomainError):
    status = 401
    code = "invalid_signature"


class Replayed(DomainError):
    status = 409
    code = "replayed"


class TooLarge(DomainError):
    status = 413
    code = "payload_too_large"


class Paused(DomainError):
    status = 423
    code = "paused"


@dataclass
class Headers:
    timestamp: str
    signature: str
    idempotency_key: str
    content_type: str


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value for `body` sent at `timestamp` (what a sender computes)."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def event_trigger(key: str) -> Trigger:
    trigger = (Trigger.objects.select_related("agent", "secret", "delivery_conversation")
               .filter(key=key, kind=Trigger.Kind.EVENT).first() if key and len(key) <= 64 else None)
    if trigger is None:
        raise NotFound("No trigger has this address.")
    return trigger


def check_size(declared: str | None, body_length: int | None = None) -> None:
    limit = settings.TRIGGER_WEBHOOK_MAX_BYTES
    try:
        declared_length = int(declared or 0)
    except ValueError:
        declared_length = 0
    if declared_length > limit or (body_length is not None and body_length > limit):
        raise TooLarge(f"The body is larger than {limit // 1024} KB.", details={"limit_bytes": limit})


def check_rate(trigger: Trigger) -> None:
    limit = settings.TRIGGER_RATE_LIMIT_PER_MINUTE
    allowed, retry_after = ratelimit.hit("trigger-hook", str(trigger.pk), limit)
    if not allowed:
        raise RateLimited(f"Too many events for this trigger: the limit is {limit} per minute.",
                          retry_after=retry_after)


def check_signature(trigger: Trigger, headers: Headers, body: bytes, *, now: float | None = None) -> None:
    from triggers.services import signing_secret

    if not headers.timestamp or not headers.signature:
        raise Unauthorized("Sign the request: X-AgenticOS-Timestamp and X-AgenticOS-Signature are required.")
    try:
        sent_at = int(headers.timestamp)
    except ValueError:
        raise Unauthorized("X-AgenticOS-Timestamp must be unix seconds.") from None
    expected = sign(signing_secret(trigger), headers.timestamp, body)
    if not hmac.compare_digest(expected.encode(), headers.signature.strip().encode()[:MAX_HEADER]):
        raise Unauthorized("The signature does not match this trigger's signing secret.")
    tolerance = settings.TRIGGER_SIGNATURE_TOLERANCE_SECONDS
    if abs((now if now is not None else time.time()) - sent_at) > tolerance:
        raise Unauthorized(f"The timestamp is more than {tolerance // 60} minutes off.", code="stale_timestamp")


def check_enabled(trigger: Trigger) -> None:
    if not trigger.enabled:
        raise Paused("This trigger is paused.")


def remember_signature(trigger: Trigger, headers: Headers) -> None:
    """A signature is accepted once: a second delivery of the same signed request is a replay."""
    key = f"agenticos:trigger-sig:{trigger.pk}:{headers.signature.strip()[:MAX_HEADER]}"
    window = 2 * settings.TRIGGER_SIGNATURE_TOLERANCE_SECONDS
    if not ratelimit.client().set(key, b"1", nx=True, ex=window):
        raise Replayed("This signed request was already received.")


def _idempotency_key(trigger: Trigger, headers: Headers) -> str:
    return f"agenticos:trigger-idem:{trigger.pk}:{headers.idempotency_key[:MAX_HEADER]}"


def claim_idempotency(trigger: Trigger, headers: Headers) -> str | None:
    """None when this key is new (and now taken); else the run id the first request got ("" while it is
    still being started)."""
    if not headers.idempotency_key:
        return None
    key = _idempotency_key(trigger, headers)
    client = ratelimit.client()
    if client.set(key, b"", nx=True, ex=IDEMPOTENCY_SECONDS):
        return None
    earlier = client.get(key)
    if isinstance(earlier, bytes):
        return earlier.decode()
    return str(earlier or "")


def settle_idempotency(trigger: Trigger, headers: Headers, run_id: str | None) -> None:
    if not headers.idempotency_key:
        return
    key = _idempotency_key(trigger, headers)
    if run_id:
        ratelimit.client().set(key, run_id.encode(), ex=IDEMPOTENCY_SECONDS)
    else:  # nothing was started: a retry with the same key may try again
        ratelimit.client().delete(key)
