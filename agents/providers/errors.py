"""A safe summary of a model provider failure, fit for a run's `error` field, a frame or a log line.

Only the exception's class name, the HTTP status and a fixed, hand-written message per category are kept.
The exception's own text is never used: SDK messages carry response bodies, URLs (with query strings that
may hold a key) and, for some providers, echoes of the request. The one exception is the outbound guard's
refusal (`netguard.Refused`), written to be shown: the host and the address it resolved to.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import exceptions as pai

from agenticos import netguard
from agenticos.errors import DomainError

# Most specific first: the first class the exception is an instance of wins.
_CATEGORIES: list[tuple[type[BaseException], str, str]] = [
    (pai.ModelAuthenticationError, "authentication", "The model provider rejected the API key."),
    (pai.ModelRateLimitError, "rate_limited", "The model provider is rate limiting requests; try again shortly."),
    (pai.ModelQuotaExceededError, "quota_exceeded", "The model provider account has run out of quota or credit."),
    (pai.ModelContextWindowExceededError, "context_window", "The conversation is too long for this model."),
    (pai.ModelNotFoundError, "not_found", "The model provider does not know this model (or the base URL is wrong)."),
    (pai.ModelRequestRejectedError, "rejected", "The model provider rejected the request."),
    (pai.ModelUnavailableError, "unavailable", "The model provider is temporarily unavailable."),
    (pai.ModelServerError, "server_error", "The model provider failed with a server error."),
    (pai.ModelTimeoutError, "timeout", "The model provider did not answer in time."),
    (pai.ModelRequestTimeout, "timeout", "The model provider did not answer in time."),
    (pai.ModelConnectionError, "connection", "The model provider could not be reached."),
    (TimeoutError, "timeout", "The model provider did not answer in time."),
    (pai.ModelHTTPError, "http_error", "The model provider returned an error."),
    (pai.ModelAPIError, "provider_error", "The model provider request failed."),
    (pai.UnexpectedModelBehavior, "unexpected_behavior", "The model answered in a way the run could not use."),
]


def _status_of(exc: BaseException) -> int | None:
    """The HTTP status from the exception or the SDK exception it wraps (`__cause__`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        status = getattr(current, "status_code", None)
        if isinstance(status, int):
            return status
        response = getattr(current, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            return status
        current = current.__cause__
    return None


def _category_of(exc: BaseException, status: int | None) -> tuple[str, str]:
    if isinstance(exc, DomainError):
        # Our own configuration errors (ModelConfigurationError…): hand-written messages, safe to show.
        return exc.code, exc.message
    for klass, category, message in _CATEGORIES:
        if isinstance(exc, klass):
            return category, message
    # SDK or HTTP client exceptions used directly (embeddings, transcription): judged by class name and status.
    name = type(exc).__name__
    if "Timeout" in name:
        return "timeout", "The model provider did not answer in time."
    if "Connect" in name:
        return "connection", "The model provider could not be reached."
    if status == 401 or status == 403:
        return "authentication", "The model provider rejected the API key."
    if status is not None and status >= 500:
        return "server_error", "The model provider failed with a server error."
    return "error", "The model request failed."


def describe_provider_error(exc: BaseException) -> dict[str, Any]:
    """`{"type", "status", "category", "message"}`; for a failed FallbackModel also `"attempts"`, one per model.

    `type` is the exception's class name, `status` the HTTP status or None. Never a key, a URL or a body.
    """
    if isinstance(exc, BaseExceptionGroup):
        attempts = [describe_provider_error(inner) for inner in exc.exceptions]
        last = attempts[-1] if attempts else {"status": None, "category": "error", "message": "The model request failed."}
        return {
            "type": type(exc).__name__,
            "status": last["status"],
            "category": last["category"],
            "message": f"Every configured model failed. {last['message']}",
            "attempts": attempts,
            **({"hint": hints[0]} if (hints := [a["hint"] for a in attempts if a.get("hint")]) else {}),
        }
    refusal = netguard.refusal_in(exc)
    if refusal is not None:
        # The outbound guard's own words (host and resolved address, never a key); nothing was sent.
        # Its hint (the setting an operator changes) is kept apart: shown only to who may read it (`hint`).
        summary = {"type": type(refusal).__name__, "status": None, "category": "address_refused",
                   "message": f"The model provider's address was refused: {refusal}"}
        if getattr(refusal, "hint", ""):
            summary["hint"] = refusal.hint  # type: ignore[attr-defined]
        return summary
    status = _status_of(exc)
    category, message = _category_of(exc, status)
    return {"type": type(exc).__name__, "status": status, "category": category, "message": message}
