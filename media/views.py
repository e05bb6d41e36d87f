"""Serving generated files: `/api/v1/generated/<filename>` for members of the file's organization; the embed
visitor's own route (`/api/v1/embed/<key>/generated/<filename>?media=`) is embeds.views.generated_file, which
answers with `served` here.

Anything else — another organization's file, a visitor of another conversation, an unknown or malformed name —
is the same 404 in the error envelope, so a filename cannot be probed. Streamed inline with its stored type,
`nosniff` and a sandboxing CSP (an image or a clip is never a page that runs script); `?download=1` answers it
as an attachment; one byte range (`Range: bytes=…`) is answered 206, as audio and video players seek."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from django.http import FileResponse, HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request

from agenticos.api_base import OrgAPIView
from agenticos.errors import NotFound, json_error
from media import store
from media.models import GeneratedMedia

NOT_FOUND = "Generated file not found."
# One range, as players ask (`bytes=0-`, `bytes=1000-1999`, `bytes=-500`); anything else is ignored and the
# whole file is answered, as RFC 9110 allows.
RANGE_RE = re.compile(r"bytes=(\d*)-(\d*)")
CHUNK = 64 * 1024


def _byte_range(header: str, size: int) -> tuple[int, int] | None | bool:
    """(first, last) of a satisfiable single range, None for no usable Range header, False when unsatisfiable."""
    found = RANGE_RE.fullmatch(header.strip()) if header else None
    if found is None or found.groups() == ("", ""):
        return None
    first, last = found.groups()
    if not first:  # a suffix: the last N bytes
        length = int(last)
        return (max(size - length, 0), size - 1) if length and size else False
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or (last and int(last) < start):
        return False
    return start, end


def _slice(handle: Any, start: int, end: int) -> Iterator[bytes]:
    try:
        handle.seek(start)
        left = end - start + 1
        while left > 0:
            chunk = handle.read(min(CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
    finally:
        handle.close()


def _headers(response: HttpResponseBase) -> HttpResponseBase:
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=300"
    response["Accept-Ranges"] = "bytes"
    return response


def _response(media: GeneratedMedia, handle: Any, request: HttpRequest | Request) -> HttpResponseBase:
    download = request.GET.get("download") == "1"
    wanted = _byte_range(request.META.get("HTTP_RANGE", ""), media.size)
    if wanted is False:
        handle.close()
        refused = json_error(416, "range_not_satisfiable", "The requested range is outside the file.",
                             {"size": media.size})
        refused["Content-Range"] = f"bytes */{media.size}"
        return refused
    if isinstance(wanted, tuple):
        start, end = wanted
        partial = StreamingHttpResponse(_slice(handle, start, end), status=206, content_type=media.media_type)
        partial["Content-Range"] = f"bytes {start}-{end}/{media.size}"
        partial["Content-Length"] = str(end - start + 1)
        partial["Content-Disposition"] = content_disposition_header(download, media.name) or ""
        return _headers(partial)
    return _headers(FileResponse(handle, as_attachment=download, filename=media.name, content_type=media.media_type))


def served(media: GeneratedMedia | None, request: HttpRequest | Request) -> HttpResponseBase | None:
    handle = store.open_stored(media) if media is not None else None
    if media is None or handle is None:
        return None
    return _response(media, handle, request)


class GeneratedFileView(OrgAPIView):
    # GET /api/v1/generated/{filename}: any member of the file's organization (or its API key). The boundary
    # is the organization, wider than an uploaded file's (one person's): the catalog says so for every
    # generated file, so a colleague can open an image a teammate's agent drew.
    permission_map: dict[str, str] = {}

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # A player or <img> asks for audio/* or image/*: the file answers whatever was asked, and an error
        # falls back to the JSON envelope instead of a 406.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        summary="A generated image, speech clip or video clip",
        parameters=[OpenApiParameter("download", OpenApiTypes.STR, enum=["1"], required=False,
                                     description="1: answer it as an attachment (Content-Disposition).")],
        responses={
            **{(200, media_type): OpenApiResponse(OpenApiTypes.BINARY, description="The file's bytes.")
               for media_type in sorted(set(store.EXTENSIONS))},
            **{(206, media_type): OpenApiResponse(OpenApiTypes.BINARY, description="The bytes of one `Range`.")
               for media_type in sorted(set(store.EXTENSIONS))},
            416: OpenApiResponse(description="The `Range` is outside the file (error envelope, Content-Range: "
                                             "bytes */size)."),
        },
    )
    def get(self, request: Request, filename: str) -> HttpResponseBase:
        media = store.find(filename, organization_id=self.actor.organization.pk)
        response = served(media, request)
        if response is None:
            raise NotFound(NOT_FOUND)
        return response
