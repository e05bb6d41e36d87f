"""REST: a file for the next chat message (web chat's attach button, or any member client of the API).

The intake is the hosted page's (agents.uploads.read_upload): CHAT_MAX_UPLOAD_SIZE_MB, the same allow-list sniffed
from the bytes. The answer's `id` goes in the message's `attachment_ids` on the chat socket."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import parsers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS, BaseOrgView
from agenticos.serializers import ErrorSerializer
from agents import uploads

UPLOAD_SCHEMA = {
    "multipart/form-data": {
        "type": "object",
        "properties": {"file": {"type": "string", "format": "binary"}},
        "required": ["file"],
    }
}


class AttachmentSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="Name it in the chat message's attachment_ids (valid for a day, once).")
    name = serializers.CharField()
    mime = serializers.CharField(help_text="The type recognised from the bytes, not the one the client declared.")
    size = serializers.IntegerField(help_text="Bytes.")


class AttachmentUploadView(BaseOrgView):
    permission_map = {"POST": "agents:run"}
    parser_classes = [parsers.MultiPartParser, parsers.FormParser]
    serializer_class = AttachmentSerializer

    @extend_schema(
        request=UPLOAD_SCHEMA,
        responses={201: AttachmentSerializer, **WRITE_ERRORS,
                   413: OpenApiResponse(ErrorSerializer, description="Over CHAT_MAX_UPLOAD_SIZE_MB (details.limit_bytes)."),
                   415: OpenApiResponse(ErrorSerializer, description="Not a PDF, PNG, JPEG, WebP, GIF, text, Markdown "
                                                                     "or CSV file, judged by its bytes.")},
        summary="Upload a file to attach to my next chat message",
    )
    def post(self, request: Request) -> Response:
        limit = uploads.chat_max_bytes()
        uploads.refuse_oversized_body(request, limit)  # before the multipart body is parsed
        got = uploads.read_upload(request, limit)
        stored = uploads.store_chat_upload(actor=self.actor, upload=got)
        return Response(AttachmentSerializer(stored).data, status=status.HTTP_201_CREATED)
