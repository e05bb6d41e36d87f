"""The capability catalog (the Builder draws its picker and config forms from it) and a conversation's
workspace (the files panel)."""

from __future__ import annotations

import posixpath

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api_base import OrgAPIView
from agenticos.errors import Forbidden, Invalid, NotFound
from agents.access import readable_conversation
from capabilities import registry
from capabilities.sandbox.capability import is_withheld
from capabilities.serializers import (
    CatalogSerializer,
    ConversationWorkspaceSerializer,
    WorkspaceFileSerializer,
)
from workspaces import store
from workspaces.models import Workspace


class CapabilityCatalogView(OrgAPIView):
    """GET /api/v1/agents/capabilities — every capability of this deployment, with JSON Schemas."""

    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: CatalogSerializer}, summary="The capability catalog")
    def get(self, request: Request) -> Response:
        return Response(registry.catalog_json())


# ------------------------------------------------------------------ a conversation's workspace (files panel)


def _conversation_workspace(actor, conversation_id) -> Workspace | None:
    """Through the conversation, deliberately: whoever may read the chat (its owner, people it is shared
    with, channel threads they are in) may read its files — and nobody else, outsiders included."""
    return store.for_conversation(readable_conversation(actor, conversation_id).pk)


PATH_PARAMETER = OpenApiParameter("path", OpenApiTypes.STR, required=True,
                                  description="The file's path, e.g. /workspace/notes.md.")


def _workspace_path(request: Request) -> str:
    raw = str(request.query_params.get("path") or "")
    if not raw:
        raise Invalid("Pass the file's path, e.g. ?path=/workspace/notes.md.", details={"field": "path"})
    return store.normal(raw)


def _requested_file(actor, conversation_id, request: Request) -> tuple[str, bytes]:
    """The `?path=` file of the conversation's workspace: (its absolute path, its bytes)."""
    workspace = _conversation_workspace(actor, conversation_id)
    if workspace is None:
        raise NotFound("This conversation has no workspace.")
    path = _workspace_path(request)
    return path, _readable(workspace, path)


def _readable(workspace: Workspace, path: str) -> bytes:
    if is_withheld(path):
        raise Forbidden("This file looks like a credential; its content is not shown.")
    try:
        return store.read(workspace.pk, path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise NotFound("There is no file at this path in this conversation's workspace.") from None


class ConversationWorkspaceView(OrgAPIView):
    """GET /api/v1/conversations/{id}/workspace — whose files these are, how full, and every file.
    `{"workspace": null}` when the conversation's agent keeps no files (the panel is then absent)."""

    permission_map = {"GET": "agents:run"}

    @extend_schema(responses={200: ConversationWorkspaceSerializer}, summary="A conversation's workspace")
    def get(self, request: Request, conversation_id) -> Response:
        workspace = _conversation_workspace(self.actor, conversation_id)
        if workspace is None:
            return Response({"workspace": None})
        used, cap = store.fill(workspace)
        return Response({"workspace": {
            "id": str(workspace.pk), "scope": workspace.scope, "label": workspace.label, "backend": workspace.backend,
            "used_bytes": used, "max_bytes": cap, "files": store.listing(workspace),
        }})


class ConversationWorkspaceFileView(OrgAPIView):
    """GET /api/v1/conversations/{id}/workspace/file?path= — one file as text."""

    permission_map = {"GET": "agents:run"}

    @extend_schema(parameters=[PATH_PARAMETER], responses={200: WorkspaceFileSerializer},
                   summary="One file of a conversation's workspace, as text")
    def get(self, request: Request, conversation_id) -> Response:
        path, data = _requested_file(self.actor, conversation_id, request)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Invalid("This file is not text: download it from …/workspace/raw.",
                          details={"field": "path"}) from None
        return Response({"path": path, "size": len(data), "content": text})


class ConversationWorkspaceRawView(OrgAPIView):
    """GET /api/v1/conversations/{id}/workspace/raw?path= — one file's bytes, as a download."""

    permission_map = {"GET": "agents:run"}

    @extend_schema(parameters=[PATH_PARAMETER],
                   responses={(200, "*/*"): OpenApiResponse(
                       OpenApiTypes.BINARY, description="The file's bytes, as a download (its own media type).")},
                   summary="One file of a conversation's workspace, as a download")
    def get(self, request: Request, conversation_id) -> HttpResponse:
        path, data = _requested_file(self.actor, conversation_id, request)
        name = posixpath.basename(path)
        response = HttpResponse(data, content_type=store.mime_for(name))
        response["Content-Disposition"] = f'attachment; filename="{name.replace(chr(34), "")}"'
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "sandbox"
        return response
