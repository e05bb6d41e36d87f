"""Serving generated files: `/api/v1/generated/<filename>` for members of the file's organization, and
`/api/v1/embed/<key>/generated/<filename>?visitor=` for the embed visitor whose conversation it was made in.

Anything else — another organization's file, a visitor of another conversation, an unknown or malformed name —
is the same 404 in the error envelope, so a filename cannot be probed. Streamed inline with its stored type,
`nosniff` and a sandboxing CSP (an image or a clip is never a page that runs script); `?download=1` answers it
as an attachment."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, HttpRequest, HttpResponseBase
from django.views.decorators.http import require_GET
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request

from agenticos.api_base import OrgAPIView
from agenticos.errors import NotFound, json_error
from capabilities.generated_media import store
from capabilities.generated_media.models import GeneratedMedia

NOT_FOUND = "Generated file not found."


def _response(media: GeneratedMedia, handle: Any, *, download: bool) -> FileResponse:
    response = FileResponse(handle, as_attachment=download, filename=media.name, content_type=media.media_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=300"
    return response


def _served(media: GeneratedMedia | None, request: HttpRequest | Request) -> FileResponse | None:
    handle = store.open_stored(media) if media is not None else None
    if media is None or handle is None:
        return None
    return _response(media, handle, download=request.GET.get("download") == "1")


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
        responses={(200, media_type): OpenApiResponse(OpenApiTypes.BINARY, description="The file's bytes.")
                   for media_type in sorted(set(store.EXTENSIONS))},
    )
    def get(self, request: Request, filename: str) -> HttpResponseBase:
        media = store.find(filename, organization_id=self.actor.organization.pk)
        response = _served(media, request)
        if response is None:
            raise NotFound(NOT_FOUND)
        return response


@require_GET
def embed_generated_file(request: HttpRequest, key: str, filename: str) -> HttpResponseBase:
    """The embed visitor's own conversation's files, named by their visitor key (header or `?visitor=`)."""
    from embeds import services
    from embeds.views import find_embed

    embed = find_embed(key)
    visitor = services.clean_visitor_key(request.headers.get("X-Visitor") or request.GET.get("visitor"))
    conversation = services.find_conversation(embed, visitor) if embed is not None and visitor else None
    media = None
    if embed is not None and conversation is not None:
        media = store.find(filename, conversation_id=conversation.pk, organization_id=embed.organization_id)
    response = _served(media, request)
    if response is None:
        return json_error(404, "not_found", NOT_FOUND)
    # The widget draws it on the customer's page, another origin.
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response
