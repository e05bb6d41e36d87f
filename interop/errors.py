"""OpenAI's error object at the edge of `/v1/`: `{"error": {"message", "type", "code"}}`.

Domain errors inside are the platform's own (agenticos.errors); this is the one place they become OpenAI's
shape, so a client library raises the exception it knows (AuthenticationError, NotFoundError, …)."""

from __future__ import annotations

from django.http import JsonResponse
from rest_framework import exceptions as drf

from agenticos.errors import DomainError, RateLimited


class ApiError(Exception):
    def __init__(self, status: int, message: str, *, type_: str = "invalid_request_error", code: str | None = None,
                 retry_after: int | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.retry_after = status, message, type_, code, retry_after


TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "insufficient_quota",
    403: "permission_error", 404: "invalid_request_error", 409: "invalid_request_error",
    422: "invalid_request_error", 429: "rate_limit_error",
}


def from_domain(exc: Exception) -> ApiError:
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, RateLimited):
        return ApiError(429, exc.message, type_="rate_limit_error", code="rate_limited", retry_after=exc.retry_after)
    if isinstance(exc, DomainError):
        return ApiError(exc.status, exc.message, type_=TYPES.get(exc.status, "invalid_request_error"), code=exc.code)
    if isinstance(exc, drf.AuthenticationFailed):
        return ApiError(401, str(exc.detail), type_="authentication_error", code="invalid_api_key")
    raise exc


def error_response(error: ApiError) -> JsonResponse:
    body = {"error": {"message": error.message, "type": error.type, "param": None, "code": error.code}}
    response = JsonResponse(body, status=error.status)
    if error.retry_after is not None:
        response["Retry-After"] = str(error.retry_after)
    return response
