"""`POST /api/v1/hooks/<key>`: a signed event starts its trigger's run and is answered 202 at once.

No session and no API key: the signature is the credential (checks and their order in `triggers.hooks`).
Every refusal is the error envelope and leaves nothing behind: no firing, no run.
"""

from __future__ import annotations

import logging

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agenticos.errors import DomainError, RateLimited, json_error
from triggers import firing, hooks

logger = logging.getLogger(__name__)


def _refusal(exc: DomainError) -> JsonResponse:
    response = json_error(exc.status, exc.code, exc.message, exc.details)
    if isinstance(exc, RateLimited):
        response["Retry-After"] = str(exc.retry_after)
    return response


def _body(request: HttpRequest) -> bytes:
    """At most one byte past the limit is read, so an oversized body without a Content-Length is refused
    without holding it all."""
    from django.conf import settings

    hooks.check_size(request.META.get("CONTENT_LENGTH"))
    body = request.read(settings.TRIGGER_WEBHOOK_MAX_BYTES + 1)
    hooks.check_size(None, len(body))
    return body


@csrf_exempt
def event_hook(request: HttpRequest, key: str) -> JsonResponse:
    if request.method != "POST":
        return json_error(405, "method_not_allowed", "Send events with POST.")
    try:
        trigger = hooks.event_trigger(key)
        body = _body(request)
        hooks.check_rate(trigger)
        headers = hooks.Headers(
            timestamp=request.headers.get("X-AgenticOS-Timestamp", ""),
            signature=request.headers.get("X-AgenticOS-Signature", ""),
            idempotency_key=request.headers.get("Idempotency-Key", "").strip(),
            content_type=request.headers.get("Content-Type", ""),
        )
        hooks.check_signature(trigger, headers, body)
        hooks.check_enabled(trigger)
        hooks.remember_signature(trigger, headers)
        earlier = hooks.claim_idempotency(trigger, headers)
    except DomainError as exc:
        return _refusal(exc)
    if earlier is not None:
        return JsonResponse({"run_id": earlier or None, "duplicate": True}, status=202)
    run_id = None
    try:
        fired = firing.fire_event(trigger, body, headers.content_type)
        run_id = str(fired.run.pk) if fired.run is not None else None
    finally:
        hooks.settle_idempotency(trigger, headers, run_id)
    if run_id is None:
        return json_error(409, "not_fired", fired.firing.reason or "The trigger did not start a run.",
                          {"firing_id": fired.firing.pk})
    return JsonResponse({"run_id": run_id, "firing_id": fired.firing.pk}, status=202)
