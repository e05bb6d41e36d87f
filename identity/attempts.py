"""Sign-in attempts are counted: a password, a second-step code or passkey, a passkey alone and the WebAuthn
challenges they ask for, each per caller address (and per person where one is named) per minute, in the
deployment's Redis (agenticos.ratelimit: the counters every worker shares, as SCIM and runs use). Past the limit
the attempt is refused before anything is checked: a six-digit code or a passkey assertion cannot be tried
without end, and a flood of challenges cannot fill session storage.

The console signs people in with its own views (console/signin.py), not allauth's, so allauth's form-level
limits (ACCOUNT_RATE_LIMITS) do not apply to them; these counters do the same job for those views.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

from agenticos import ratelimit

SIGN_IN_FORM = "signin-form"  # e-mail and password
SECOND_STEP = "signin-second-step"
PASSKEY = "signin-passkey"
PASSKEY_OPTIONS = "signin-passkey-options"


def refused(request: HttpRequest, kind: str, *, person: object = None) -> int | None:
    """Count one attempt of `kind` from this request's address (and by `person`, when named: an e-mail or a user
    id, so changing address does not escape it). None when allowed; the seconds to wait when refused."""
    address = ratelimit.client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))
    limit = settings.SIGNIN_ATTEMPTS_PER_MINUTE
    counters = [(kind, address, limit)]
    if person not in (None, ""):
        counters.append((f"{kind}-person", str(person).strip().lower(), limit))
    allowed, retry_after = ratelimit.hit_all(counters)
    return None if allowed else retry_after


def message(retry_after: int) -> str:
    return f"Too many sign-in attempts. Try again in {retry_after} seconds."
