"""Domain exceptions inside, one error envelope at the edge: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

logger = logging.getLogger(__name__)


class DomainError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, details: Any = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = details
        if code:
            self.code = code


class NotFound(DomainError):
    status = 404
    code = "not_found"


class Forbidden(DomainError):
    status = 403
    code = "forbidden"


class Conflict(DomainError):
    status = 409
    code = "conflict"


class Invalid(DomainError):
    """Input that parses but breaks a rule: 422 with field paths in details."""

    status = 422
    code = "invalid"


class RateLimited(DomainError):
    status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int, details: Any = None):
        super().__init__(message, details=details)
        self.retry_after = retry_after


def envelope(code: str, message: str, details: Any = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details if details is not None else {}}}


def _drf_code(exc: drf.APIException) -> str:
    return {
        drf.NotAuthenticated: "not_authenticated",
        drf.AuthenticationFailed: "authentication_failed",
        drf.PermissionDenied: "forbidden",
        drf.NotFound: "not_found",
        drf.MethodNotAllowed: "method_not_allowed",
        drf.ParseError: "parse_error",
        drf.UnsupportedMediaType: "unsupported_media_type",
        drf.Throttled: "rate_limited",
        drf.ValidationError: "validation_error",
    }.get(type(exc), "error")


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, DomainError):
        response = Response(envelope(exc.code, exc.message, exc.details), status=exc.status)
        if isinstance(exc, RateLimited):
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, Http404):
        return Response(envelope("not_found", "Not found."), status=404)
    if isinstance(exc, DjangoPermissionDenied):
        return Response(envelope("forbidden", "You do not have permission to do this."), status=403)
    if isinstance(exc, drf.APIException):
        drf_exception_handler(exc, context)  # sets auth headers such as WWW-Authenticate
        if isinstance(exc, drf.ValidationError):
            message, details = "The request is invalid.", exc.detail
        else:
            detail = exc.detail
            message, details = (str(detail), {}) if not isinstance(detail, dict | list) else ("Error.", detail)
        status = exc.status_code
        if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
            status = 401
        response = Response(envelope(_drf_code(exc), message, details), status=status)
        if isinstance(exc, drf.Throttled) and exc.wait:
            response["Retry-After"] = str(int(exc.wait))
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="api"'
        return response
    logger.exception("Unhandled API error", exc_info=exc)
    return Response(envelope("server_error", "Something went wrong on our side."), status=500)


def json_error(status: int, code: str, message: str, details: Any = None) -> JsonResponse:
    return JsonResponse(envelope(code, message, details), status=status)
