"""The edge of /api/: every response there is the error envelope, and input no view can store is refused
before any view sees it.

Django answers some failures itself, outside DRF's exception handler: an unknown route (with DEBUG on,
its technical 404 page skips `handler404`), `require_POST`'s 405, a CSRF failure, an exception in a plain
view or in another middleware. `ApiEdgeMiddleware` turns each into `{"error": {"code", "message",
"details"}}` with the same status. Before the view it refuses, in one place:

- a NUL character in the path, the query string, a header or a JSON string (PostgreSQL cannot store
  one: it used to surface as a `DataError` 500) → 422;
- a body over `DATA_UPLOAD_MAX_MEMORY_SIZE` that is not a multipart upload (DRF's JSON parser reads the
  stream past Django's limit) → 413;
- JSON nested deeper than `MAX_JSON_DEPTH` (the parser's recursion ran out at ~1,000 levels) → 400.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.common import CommonMiddleware
from rest_framework.metadata import SimpleMetadata

from agenticos.errors import envelope, envelope_for_status, map_exception

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
MAX_JSON_DEPTH = 100
# Headers an envelope must keep from the response it replaces.
KEPT_HEADERS = ("Allow", "WWW-Authenticate", "Retry-After")
# A JSON string, written as an unrolled loop so an unterminated one cannot backtrack.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")
# \u0000 escaped in a JSON string: preceded by an even number of backslashes (zero included).
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def _refusal(status: int, code: str, message: str, details: dict | None = None) -> JsonResponse:
    return JsonResponse(envelope(code, message, details), status=status)


def _nul_refusal(where: str) -> JsonResponse:
    return _refusal(422, "invalid", f"The {where} contains a NUL character, which cannot be stored.",
                    {"where": where})


def _is_json(request: HttpRequest) -> bool:
    media = (request.content_type or "").lower()
    return media == "application/json" or media.endswith("+json")


def _json_depth(body: bytes) -> int:
    depth = deepest = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub(b'""', body)):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def refuse_at_the_edge(request: HttpRequest) -> JsonResponse | None:
    """The refusal for input no view can handle, or None."""
    if "\x00" in request.path_info:
        return _nul_refusal("path")
    if "\x00" in unquote_plus(request.META.get("QUERY_STRING", "")):
        return _nul_refusal("query string")
    if any("\x00" in str(value) for key, value in request.META.items() if key.startswith("HTTP_")):
        return _nul_refusal("header")
    media = (request.content_type or "").lower()
    if not media.startswith("multipart/"):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _refusal(400, "bad_request", "The Content-Length header is not a number.")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and length > limit:
            return _refusal(413, "too_large", f"The request body is larger than {limit} bytes.",
                            {"limit_bytes": limit})
    if _is_json(request):
        body = request.body  # read once here; DRF and the plain views read this copy
        if _JSON_NUL.search(body) or b"\x00" in body:
            return _nul_refusal("body")
        if _json_depth(body) > MAX_JSON_DEPTH:
            return _refusal(400, "too_deep", f"The JSON body is nested deeper than {MAX_JSON_DEPTH} levels.",
                            {"limit": MAX_JSON_DEPTH})
    return None


def as_envelope(response: HttpResponse) -> HttpResponse:
    """An error answered by Django itself (an HTML page, a bare status) becomes the envelope; JSON, and a
    body the view chose on purpose (a script, an image), stays as it is."""
    if response.status_code < 400 or response.streaming:
        return response
    media = response.get("Content-Type", "").lower()
    if "json" in media:
        return response
    if response.content and not media.startswith(("text/html", "text/plain")):
        return response
    replaced = JsonResponse(envelope_for_status(response.status_code), status=response.status_code)
    for header in KEPT_HEADERS:
        if header in response:
            replaced[header] = response[header]
    return replaced


class ApiEdgeMiddleware:
    """First in MIDDLEWARE after SecurityMiddleware, so it sees what every later one answers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api(request):
            return self.get_response(request)
        try:
            refusal = refuse_at_the_edge(request)
        except Exception as exc:  # noqa: BLE001 — reading the body can raise (too big, client gone)
            refusal = self.process_exception(request, exc)
        if refusal is not None:
            return refusal
        return as_envelope(self.get_response(request))

    def process_exception(self, request: HttpRequest, exception: Exception) -> JsonResponse | None:
        """A plain view's exception under /api/ (DRF views map theirs in agenticos.errors.exception_handler)."""
        if not is_api(request):
            return None
        mapped = map_exception(exception)
        if mapped is not None:
            return JsonResponse(mapped[1], status=mapped[0])
        logger.exception("Unhandled API error", exc_info=exception)
        return JsonResponse(envelope_for_status(500), status=500)


class ApiCommonMiddleware(CommonMiddleware):
    """Django's CommonMiddleware, minus APPEND_SLASH under /api/: every API route answers with and without
    the slash (agenticos.api.route), and a slash redirect of a POST is a RuntimeError with DEBUG on."""

    def should_redirect_with_slash(self, request: HttpRequest) -> bool:
        return not is_api(request) and super().should_redirect_with_slash(request)


class ApiMetadata(SimpleMetadata):
    """OPTIONS on any API view: name, description and media types, without `actions` — SimpleMetadata
    builds those from `get_serializer()`, which asserts on the views with no single serializer (a 500),
    and would describe the response serializer as the input on the others. /api/schema/ says both.
    (It lives here, not beside the views: rest_framework.views imports it while it is being imported.)"""

    def determine_metadata(self, request: Request, view: APIView) -> dict[str, Any]:
        return {
            "name": view.get_view_name(),
            "description": view.get_view_description(),
            "renders": [renderer.media_type for renderer in view.renderer_classes],
            "parses": [parser.media_type for parser in view.parser_classes],
        }
