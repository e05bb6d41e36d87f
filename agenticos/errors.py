"""Domain exceptions inside, one error envelope at the edge: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.db import DataError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response

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


class UploadTooLarge(DomainError):
    """A file past the surface's ceiling (agents.uploads: web chat and the hosted page)."""

    status = 413
    code = "too_large"


class UnsupportedType(DomainError):
    """A file whose bytes are not of an accepted kind (agents.uploads)."""

    status = 415
    code = "unsupported_type"


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
    # A refused key may say why in its own code (an expired key: "api_key_expired").
    own = getattr(exc.detail, "code", None)
    if isinstance(exc, drf.AuthenticationFailed) and own and own != drf.AuthenticationFailed.default_code:
        return str(own)
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


# The code of an error response that carries no envelope of its own (a Django page, a bare status).
STATUS_CODES: dict[int, tuple[str, str]] = {
    400: ("bad_request", "The request is malformed."),
    401: ("not_authenticated", "Authentication is required."),
    403: ("forbidden", "You do not have permission to do this."),
    404: ("not_found", "Not found."),
    405: ("method_not_allowed", "This method is not allowed here."),
    406: ("not_acceptable", "This resource cannot answer in the requested format."),
    413: ("too_large", "The request body is too large."),
    415: ("unsupported_media_type", "This content type is not accepted here."),
    422: ("invalid", "The request breaks a rule."),
    429: ("rate_limited", "Too many requests."),
    500: ("server_error", "Something went wrong on our side."),
}


def envelope_for_status(status: int) -> dict:
    code, message = STATUS_CODES.get(status, ("error" if status < 500 else "server_error", "Error."))
    return envelope(code, message)


def map_exception(exc: BaseException) -> tuple[int, dict] | None:
    """Exceptions Django or the database raise on bad input, as (status, envelope): the one mapping both
    the DRF views (exception_handler) and the plain views under /api/ (agenticos.middleware) use."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return 413, envelope("too_large", f"The request body is larger than {limit} bytes.", {"limit_bytes": limit})
    if isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        return 413, envelope("too_large", "The request has too many fields or files.")
    if isinstance(exc, SuspiciousOperation):
        return 400, envelope("bad_request", "The request is malformed.")
    if isinstance(exc, RecursionError):
        return 400, envelope("too_deep", "The request is nested too deeply.")
    if isinstance(exc, DataError):
        # The database refused a value the validation let through (a number past its column, a NUL):
        # it is the input's fault, and the statement was rolled back with its transaction.
        # The SQLSTATE only: the message may quote the value, and a value may be anything.
        logger.warning("value refused by the database (SQLSTATE %s)", getattr(exc.__cause__, "sqlstate", "?"))
        return 422, envelope("invalid", "A value does not fit its field (out of range or not storable).")
    return None


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
        # Imported here: this module is imported while rest_framework.views reads its settings
        # (DEFAULT_METADATA_CLASS is agenticos.middleware.ApiMetadata, which imports this module).
        from rest_framework.views import exception_handler as drf_exception_handler

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
    mapped = map_exception(exc)
    if mapped is not None:
        from rest_framework.views import set_rollback

        set_rollback()  # with ATOMIC_REQUESTS, the refused statement's transaction must not commit
        return Response(mapped[1], status=mapped[0])
    logger.exception("Unhandled API error", exc_info=exc)
    return Response(envelope("server_error", "Something went wrong on our side."), status=500)


def json_error(status: int, code: str, message: str, details: Any = None) -> JsonResponse:
    return JsonResponse(envelope(code, message, details), status=status)


# ------------------------------------------------------------------ the schema

_HTTP_METHODS = {"get", "put", "post", "delete", "patch", "options", "head", "trace"}
_EVERYWHERE = (400, 401, 403, 404, 405, 422)
_WITH_A_BODY = (413, 415)
_WRITES = (429,)
_DESCRIPTIONS = {
    400: "Malformed input (bad JSON, nested too deeply, a wrong type).",
    401: "Not authenticated, or a bad or revoked API key.",
    403: "Your role or access level is too weak.",
    404: "Not found (or not in your organization).",
    405: "This method is not allowed here.",
    413: "The request body is over the size limit.",
    415: "The content type is not accepted (JSON unless the operation says otherwise).",
    422: "Breaks a rule, or a value cannot be stored (a NUL character, a number past its column).",
    429: "Too many requests; Retry-After says when to try again.",
}
_ERROR_SCHEMA = {
    "type": "object",
    "description": "The error envelope every endpoint uses.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {}},
            "required": ["code", "message", "details"],
        }
    },
    "required": ["error"],
}


def _undocumented_success(responses: dict) -> bool:
    success = {status: r for status, r in responses.items() if status.startswith("2")}
    return set(success) == {"200"} and "content" not in success["200"]


def document_error_responses(result: dict, generator: Any, request: Any, public: bool) -> dict:
    """drf-spectacular postprocessing hook: every operation documents the envelope answers the edge
    (agenticos.middleware, exception_handler) can give it, so no response falls outside the schema.
    A view's own description of a status wins; this only fills the statuses it left out."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", _ERROR_SCHEMA)
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in _HTTP_METHODS:
                continue
            codes = list(_EVERYWHERE)
            if "requestBody" in operation:
                codes += _WITH_A_BODY
            if method != "get":
                codes += _WRITES
            responses = operation.setdefault("responses", {})
            if method == "post" and _undocumented_success(responses):
                # drf-spectacular could not see what the view answers (no serializer): it wrote "200, no
                # body", but a POST that creates answers 201. Say both rather than one wrong one.
                responses.setdefault("201", {"description": "Created (the body is not documented yet)."})
            for status in codes:
                responses.setdefault(str(status), {"description": _DESCRIPTIONS[status], "content": content})
    return result
