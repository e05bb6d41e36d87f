"""Management REST for embeds (thin views over embeds.services)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS
from agenticos.api_base import OrgAPIView
from agenticos.errors import Invalid, NotFound
from agents.models import Agent
from embeds import files, services
from embeds.models import Embed
from embeds.serializers import EmbedListSerializer, EmbedSerializer, EmbedWriteSerializer
from governance.grants import EDIT, VIEW, require_agent_access


def serialize(embed: Embed) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(embed.pk),
        "agent_id": str(embed.agent_id),
        "kind": embed.kind,
        "name": embed.name,
        "environment": embed.environment,
        "public_key": embed.public_key,
        "auth_mode": embed.auth_mode,
        # Never the secret itself, nor a hint of it.
        "jwt_secret_set": embed.jwt_secret_id is not None,
        "allowed_origins": embed.allowed_origins,
        "title": embed.title,
        "subtitle": embed.subtitle,
        "greeting": embed.greeting,
        "empty_text": embed.empty_text,
        "launcher_text": embed.launcher_text,
        "accent_color": embed.accent_color,
        "corner": embed.corner,
        "context_note": embed.context_note,
        "variables": embed.variables,
        "rate_limit_per_minute": embed.rate_limit_per_minute,
        "monthly_budget_usd": str(embed.monthly_budget_usd) if embed.monthly_budget_usd is not None else None,
        "is_paused": embed.is_paused,
        "created_at": embed.created_at.isoformat(),
        "updated_at": embed.updated_at.isoformat(),
    }
    if embed.kind == Embed.Kind.PAGE:
        data.update(
            {
                "welcome": embed.welcome,
                "logo_source": embed.logo_source,
                "has_uploaded_logo": bool(embed.logo_path),
                "show_tool_steps": embed.show_tool_steps,
                "show_tool_results": embed.show_tool_results,
                "show_thinking": embed.show_thinking,
                "allow_new_thread": embed.allow_new_thread,
                "allow_microphone": embed.allow_microphone,
                "allow_uploads": embed.allow_uploads,
                "page_url": services.page_url(embed),
            }
        )
    else:
        data["socket_url"] = services.socket_url(embed)
        if embed.kind == Embed.Kind.WIDGET:
            data["snippet"] = services.snippet(embed)
            data["script_url"] = services.widget_script_url(embed)
    return data


def _body(request: Request) -> dict:
    if not isinstance(request.data, dict):
        raise Invalid("The body must be a JSON object.")
    return dict(request.data)


class EmbedAPIView(OrgAPIView):
    # `embeds:manage` from the role is only half of it: an embed exposes its agent, so every view also needs
    # access to that agent (governance.grants) — view to read an embed, edit to create or change one, the
    # level bindings need (channelbots.services). An agent the caller cannot see answers 404, its embeds too.
    permission_map = {"*": "embeds:manage"}
    parser_classes = [JSONParser]

    def agent(self, agent_id: str, level: str) -> Agent:
        agent = self.org_get(Agent, agent_id)
        require_agent_access(self.actor, agent, level)
        return agent

    def embed(self, embed_id: str, level: str) -> Embed:
        embed = self.org_get(Embed, embed_id, self.org_queryset(Embed).select_related("agent"))
        try:
            require_agent_access(self.actor, embed.agent, level)
        except NotFound:
            raise NotFound("Embed not found.") from None
        return embed


class AgentEmbedsView(EmbedAPIView):
    @extend_schema(operation_id="v1_agents_embeds_list", responses={200: EmbedListSerializer, **ERRORS},
                   summary="An agent's embeds")
    def get(self, request: Request, agent_id: str) -> Response:
        agent = self.agent(agent_id, VIEW)
        embeds = self.org_queryset(Embed).filter(agent=agent).order_by("created_at")
        return Response({"results": [serialize(e) for e in embeds]})

    @extend_schema(request=EmbedWriteSerializer, responses={201: EmbedSerializer, **WRITE_ERRORS},
                   summary="Embed an agent (a website widget, a raw WebSocket or a hosted page)")
    def post(self, request: Request, agent_id: str) -> Response:
        agent = self.agent(agent_id, EDIT)
        embed = services.create_embed(actor=self.actor, agent=agent, data=_body(request), ip_address=self.client_ip())
        return Response(serialize(embed), status=status.HTTP_201_CREATED)


class EmbedDetailView(EmbedAPIView):
    @extend_schema(responses={200: EmbedSerializer, **ERRORS}, summary="One embed")
    def get(self, request: Request, embed_id: str) -> Response:
        return Response(serialize(self.embed(embed_id, VIEW)))

    @extend_schema(request=EmbedWriteSerializer, responses={200: EmbedSerializer, **WRITE_ERRORS},
                   summary="Change an embed (its kind is fixed)")
    def patch(self, request: Request, embed_id: str) -> Response:
        embed = self.embed(embed_id, EDIT)
        embed = services.update_embed(actor=self.actor, embed=embed, data=_body(request), ip_address=self.client_ip())
        return Response(serialize(embed))

    @extend_schema(responses={204: None, **WRITE_ERRORS}, summary="Delete an embed")
    def delete(self, request: Request, embed_id: str) -> Response:
        embed = self.embed(embed_id, EDIT)
        services.delete_embed(actor=self.actor, embed=embed, ip_address=self.client_ip())
        return Response(status=status.HTTP_204_NO_CONTENT)


class EmbedPauseView(EmbedAPIView):
    paused = True

    @extend_schema(request=None, responses={200: EmbedSerializer, **WRITE_ERRORS},
                   summary="Pause an embed")
    def post(self, request: Request, embed_id: str) -> Response:
        embed = self.embed(embed_id, EDIT)
        embed = services.set_paused(actor=self.actor, embed=embed, paused=self.paused, ip_address=self.client_ip())
        return Response(serialize(embed))


class EmbedResumeView(EmbedPauseView):
    paused = False

    # The inherited post, documented as what it does here.
    @extend_schema(request=None, responses={200: EmbedSerializer, **WRITE_ERRORS}, summary="Resume a paused embed")
    def post(self, request: Request, embed_id: str) -> Response:
        return super().post(request, embed_id)


LOGO_SCHEMA = {
    "multipart/form-data": {
        "type": "object",
        "properties": {"file": {"type": "string", "format": "binary",
                                "description": "The image (PNG, JPEG, WebP or GIF), at most 2 MB; 'logo' is also read."}},
        "required": ["file"],
    }
}


class EmbedLogoView(EmbedAPIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=LOGO_SCHEMA, responses={200: EmbedSerializer, **WRITE_ERRORS},
                   summary="Upload a hosted page's logo (an image, at most 2 MB)")
    def post(self, request: Request, embed_id: str) -> Response:
        embed = self.embed(embed_id, EDIT)
        upload = request.FILES.get("file") or request.FILES.get("logo")
        if upload is None:
            raise Invalid("Send the image as the multipart field 'file'.", details={"field": "file"})
        if upload.size and upload.size > files.LOGO_MAX_BYTES:
            raise Invalid("The logo is larger than 2 MB.", details={"field": "file", "limit_bytes": files.LOGO_MAX_BYTES})
        data = upload.read(files.LOGO_MAX_BYTES + 1)
        embed = services.set_logo(actor=self.actor, embed=embed, data=data, ip_address=self.client_ip())
        return Response(serialize(embed))


def max_embed_upload_bytes() -> int:
    embed_mb = float(getattr(settings, "EMBED_MAX_UPLOAD_SIZE_MB", 5))
    chat_mb = float(getattr(settings, "CHAT_MAX_UPLOAD_SIZE_MB", 10))
    # A ceiling on top of the chat ceiling, never a way around it.
    return int(min(embed_mb, chat_mb) * 1024 * 1024)
