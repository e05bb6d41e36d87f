"""Management REST for channel bots, bindings and chat accounts (thin views over channelbots.services)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS
from agenticos.api_base import OrgAPIView
from agenticos.errors import Forbidden, Invalid, NotFound
from agenticos.serializers import ErrorSerializer
from agents.models import Agent
from channelbots import services
from channelbots.models import Binding, ChannelBot, ChannelIdentity, Platform, Transport
from channelbots.serializers import (
    ChannelBindingCreateSerializer,
    ChannelBindingListSerializer,
    ChannelBindingSerializer,
    ChannelBindingUpdateSerializer,
    ChannelBotListSerializer,
    ChannelBotSerializer,
    ChannelBotWriteSerializer,
    ChatAccountListSerializer,
    ChatLinkConfirmedSerializer,
    ChatLinkSerializer,
)
from governance.grants import EDIT, VIEW, require_agent_access


def webhook_url(bot: ChannelBot) -> str | None:
    base = settings.FRONTEND_URL.rstrip("/")
    if bot.platform == Platform.SLACK:
        return f"{base}/api/v1/slack/{bot.pk}/events"
    if bot.platform == Platform.TELEGRAM:
        return f"{base}/api/v1/telegram/{bot.pk}/webhook"
    return f"{base}/api/v1/mattermost/{bot.pk}/webhook"


def serialize_bot(bot: ChannelBot, flags: dict[str, bool] | None = None) -> dict[str, Any]:
    try:
        binding = bot.binding
    except Binding.DoesNotExist:
        binding = None
    flags = flags if flags is not None else services.credential_flags(bot)
    data: dict[str, Any] = {
        "id": str(bot.pk),
        "platform": bot.platform,
        "name": bot.name,
        "api_base_url": bot.api_base_url,
        "transport": bot.transport,
        "access_policy": bot.policy,
        "stt_provider": bot.stt_provider or None,
        "stt_model": bot.stt_model or None,
        "stt_profile_id": str(bot.stt_profile_id) if bot.stt_profile_id else None,
        "is_paused": bot.is_paused,
        "connection_state": bot.connection_state,
        "connection_reason": bot.connection_reason,
        # Never a credential nor a hint of one: only whether it is there.
        **flags,
        "agent_id": str(binding.agent_id) if binding else None,
        "webhook_url": webhook_url(bot),
        # Slack: the Interactivity Request URL the approval buttons need (Socket Mode bots receive clicks over
        # the socket instead). Telegram asks for its button clicks itself; Mattermost's go to the URL each
        # button carries.
        "interactions_url": (f"{settings.FRONTEND_URL.rstrip('/')}/api/v1/slack/{bot.pk}/interactions"
                             if bot.platform == Platform.SLACK else None),
        "created_at": bot.created_at.isoformat(),
        "updated_at": bot.updated_at.isoformat(),
    }
    if bot.platform == Platform.MATTERMOST and bot.transport == Transport.WEBHOOK and not flags["webhook_secret_set"]:
        data["warning"] = "No webhook token: every webhook call is refused."
    if bot.platform == Platform.SLACK and not flags["signing_secret_set"] and bot.transport == Transport.WEBHOOK:
        data["warning"] = "No signing secret: the events URL answers 500 to everything, the challenge included."
    return data


def serialize_binding(binding: Binding) -> dict[str, Any]:
    return {
        "id": str(binding.pk),
        "agent_id": str(binding.agent_id),
        "bot_id": str(binding.bot_id),
        "platform": binding.bot.platform,
        "environment": binding.environment,
        "extra_prompt": binding.extra_prompt,
        "workspace_scope": binding.workspace_scope or None,
        "channel_tools": binding.channel_tools,
        "channel_tools_limit": binding.channel_tools_limit,
        "footer_mode": binding.footer_mode,
        "footer_every_n": binding.footer_every_n,
        "footer_threshold_percent": binding.footer_threshold_percent,
        "created_at": binding.created_at.isoformat(),
    }


def _body(request: Request) -> dict:
    if not isinstance(request.data, dict):
        raise Invalid("The body must be a JSON object.")
    return dict(request.data)


# A bot bound to an agent is changed only with edit access to that agent (BotAPIView.changeable_bot).
BOT_FORBIDDEN = OpenApiResponse(ErrorSerializer, description="Your role is too weak, or the bot answers as an agent "
                                                             "you cannot edit.")
BINDING_CONFLICT = OpenApiResponse(ErrorSerializer, description="The bot already answers as another agent "
                                                                "(details.field is bot_id).")
LINK_GONE = OpenApiResponse(ErrorSerializer, description="The link is unknown, used, expired, or for another "
                                                         "organization.")


class BotsView(OrgAPIView):
    permission_map = {"*": "bots:manage"}
    parser_classes = [JSONParser]

    @extend_schema(operation_id="v1_bots_list", responses={200: ChannelBotListSerializer, **ERRORS},
                   summary="List the organization's channel bots")
    def get(self, request: Request) -> Response:
        bots = list(self.org_queryset(ChannelBot).select_related("binding").order_by("name"))
        from channelbots.models import BotCredential

        kinds: dict[str, set[str]] = {}
        for bot_id, kind in BotCredential.objects.filter(bot__in=bots).values_list("bot_id", "kind"):
            kinds.setdefault(str(bot_id), set()).add(kind)
        results = []
        for bot in bots:
            have = kinds.get(str(bot.pk), set())
            flags = {f"{name}_set": kind in have for name, kind in services.CREDENTIAL_FIELDS.items()}
            results.append(serialize_bot(bot, flags))
        return Response({"results": results})

    @extend_schema(request=ChannelBotWriteSerializer, responses={201: ChannelBotSerializer, **WRITE_ERRORS},
                   summary="Create a channel bot")
    def post(self, request: Request) -> Response:
        bot = services.create_bot(actor=self.actor, data=_body(request), ip_address=self.client_ip())
        return Response(serialize_bot(bot), status=status.HTTP_201_CREATED)


class BotAPIView(OrgAPIView):
    permission_map = {"*": "bots:manage"}
    parser_classes = [JSONParser]

    def changeable_bot(self, bot_id: str) -> ChannelBot:
        """A bot that answers as an agent is part of that agent's exposure: its token, server, access policy and
        pause decide who talks to the agent and where the conversation goes. Changing it needs edit access to
        the agent, as the binding does; an unbound bot needs only `bots:manage`."""
        bot = self.org_get(ChannelBot, bot_id, self.org_queryset(ChannelBot).select_related("binding__agent"))
        try:
            agent = bot.binding.agent
        except Binding.DoesNotExist:
            return bot
        try:
            require_agent_access(self.actor, agent, EDIT)
        except NotFound:
            # The bot itself is listed for everyone with bots:manage: refuse it, do not pretend it is absent.
            raise Forbidden("This bot answers as an agent you cannot edit.", details={"needed": EDIT}) from None
        return bot


class BotDetailView(BotAPIView):
    @extend_schema(responses={200: ChannelBotSerializer, **ERRORS}, summary="A channel bot")
    def get(self, request: Request, bot_id: str) -> Response:
        return Response(serialize_bot(self.org_get(ChannelBot, bot_id)))

    @extend_schema(request=ChannelBotWriteSerializer,
                   responses={200: ChannelBotSerializer, **WRITE_ERRORS, 403: BOT_FORBIDDEN},
                   summary="Change a channel bot")
    def patch(self, request: Request, bot_id: str) -> Response:
        bot = self.changeable_bot(bot_id)
        bot = services.update_bot(actor=self.actor, bot=bot, data=_body(request), ip_address=self.client_ip())
        return Response(serialize_bot(bot))

    @extend_schema(responses={204: None, **ERRORS, 403: BOT_FORBIDDEN}, summary="Delete a channel bot")
    def delete(self, request: Request, bot_id: str) -> Response:
        services.delete_bot(actor=self.actor, bot=self.changeable_bot(bot_id), ip_address=self.client_ip())
        return Response(status=status.HTTP_204_NO_CONTENT)


class BotPauseView(BotAPIView):
    paused = True

    @extend_schema(request=None, responses={200: ChannelBotSerializer, **ERRORS, 403: BOT_FORBIDDEN},
                   summary="Pause a channel bot (it stops answering)")
    def post(self, request: Request, bot_id: str) -> Response:
        bot = services.set_paused(
            actor=self.actor, bot=self.changeable_bot(bot_id), paused=self.paused, ip_address=self.client_ip()
        )
        return Response(serialize_bot(bot))


@extend_schema_view(post=extend_schema(summary="Resume a paused channel bot"))
class BotResumeView(BotPauseView):
    paused = False


class AgentBindingsView(OrgAPIView):
    permission_map = {"GET": "agents:view", "POST": "bots:manage"}
    parser_classes = [JSONParser]

    @extend_schema(operation_id="v1_agents_bindings_list", responses={200: ChannelBindingListSerializer, **ERRORS},
                   summary="List an agent's channel bindings")
    def get(self, request: Request, agent_id: str) -> Response:
        agent = self.org_get(Agent, agent_id)
        require_agent_access(self.actor, agent, VIEW)
        rows = self.org_queryset(Binding).filter(agent=agent).select_related("bot")
        return Response({"results": [serialize_binding(b) for b in rows]})

    @extend_schema(request=ChannelBindingCreateSerializer,
                   responses={201: ChannelBindingSerializer, **WRITE_ERRORS, 409: BINDING_CONFLICT},
                   summary="Expose an agent on a channel bot")
    def post(self, request: Request, agent_id: str) -> Response:
        agent = self.org_get(Agent, agent_id)
        require_agent_access(self.actor, agent, EDIT)  # the service checks too; this refuses before the body
        binding = services.create_binding(actor=self.actor, agent=agent, data=_body(request), ip_address=self.client_ip())
        return Response(serialize_binding(binding), status=status.HTTP_201_CREATED)


class BindingDetailView(OrgAPIView):
    permission_map = {"GET": "agents:view", "*": "bots:manage"}
    parser_classes = [JSONParser]

    def _binding(self, agent_id: str, binding_id: str, level: str) -> Binding:
        """The binding, through its agent: an agent the caller cannot see hides its bindings (404), as the
        list does; changing one needs edit access (the services check it again)."""
        agent = self.org_get(Agent, agent_id)
        require_agent_access(self.actor, agent, level)
        rows = self.org_queryset(Binding).filter(agent=agent).select_related("bot", "agent")
        return self.org_get(Binding, binding_id, rows)

    @extend_schema(responses={200: ChannelBindingSerializer, **ERRORS}, summary="A channel binding")
    def get(self, request: Request, agent_id: str, binding_id: str) -> Response:
        return Response(serialize_binding(self._binding(agent_id, binding_id, VIEW)))

    @extend_schema(request=ChannelBindingUpdateSerializer, responses={200: ChannelBindingSerializer, **WRITE_ERRORS},
                   summary="Change a channel binding")
    def patch(self, request: Request, agent_id: str, binding_id: str) -> Response:
        binding = self._binding(agent_id, binding_id, EDIT)
        binding = services.update_binding(actor=self.actor, binding=binding, data=_body(request),
                                          ip_address=self.client_ip())
        return Response(serialize_binding(binding))

    @extend_schema(responses={204: None, **ERRORS}, summary="Remove a channel binding (the bot stops answering)")
    def delete(self, request: Request, agent_id: str, binding_id: str) -> Response:
        services.delete_binding(actor=self.actor, binding=self._binding(agent_id, binding_id, EDIT),
                                ip_address=self.client_ip())
        return Response(status=status.HTTP_204_NO_CONTENT)


def serialize_identity(identity: ChannelIdentity) -> dict[str, Any]:
    return {
        "id": identity.pk,
        "platform": identity.platform,
        "workspace": identity.workspace,
        "account_id": identity.account_id,
        "display_name": identity.display_name,
        "linked_at": identity.linked_at.isoformat() if identity.linked_at else None,
    }


class ChatAccountsView(OrgAPIView):
    """Settings → Chat accounts: the caller's own linked accounts."""

    parser_classes = [JSONParser]

    @extend_schema(operation_id="v1_chat_accounts_list", responses={200: ChatAccountListSerializer, **ERRORS},
                   summary="List my linked chat accounts")
    def get(self, request: Request) -> Response:
        rows = self.org_queryset(ChannelIdentity).filter(user=self.actor.user)
        return Response({"results": [serialize_identity(i) for i in rows]})


class ChatAccountDetailView(OrgAPIView):
    parser_classes = [JSONParser]

    @extend_schema(responses={204: None, **ERRORS}, summary="Disconnect one of my chat accounts")
    def delete(self, request: Request, identity_id: str) -> Response:
        identity = self.org_get(ChannelIdentity, identity_id, self.org_queryset(ChannelIdentity).filter(
            user=self.actor.user))
        services.disconnect_identity(actor=self.actor, identity=identity, ip_address=self.client_ip())
        return Response(status=status.HTTP_204_NO_CONTENT)


class LinkView(OrgAPIView):
    """Open a link (GET: which chat account it would link) and confirm it (POST). Nothing is copied."""

    parser_classes = [JSONParser]

    @extend_schema(responses={200: ChatLinkSerializer, **ERRORS, 404: LINK_GONE},
                   summary="Which chat account a link would link to me")
    def get(self, request: Request, token: str) -> Response:
        link = services.find_link(token)
        if link.organization_id != self.actor.organization.pk:
            raise services.NotFound("This link is unknown, used or expired: send the bot `link` again.")
        return Response({"chat_account": serialize_identity(link.identity), "bot": link.bot.name,
                         "confirm": "POST this URL to link the chat account to you."})

    @extend_schema(request=None, responses={200: ChatLinkConfirmedSerializer, **ERRORS, 404: LINK_GONE},
                   summary="Link the chat account to me")
    def post(self, request: Request, token: str) -> Response:
        identity = services.confirm_link(actor=self.actor, token=token, ip_address=self.client_ip())
        return Response({"chat_account": serialize_identity(identity), "linked": True})
