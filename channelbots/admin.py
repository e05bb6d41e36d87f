"""Operator console: chat bots, the agent each serves (bindings) and the chat accounts that wrote to them.

Read-only: what a bot does, and who it answers, is its organization's to change in the web console, where the
changes are checked (server addresses, credentials sealed) and the supervisor is told. Credentials never show
here, not even masked: only which kinds are set.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count

from agenticos.admin import ReadOnlyAdmin, UUIDSearchMixin, admin_link
from channelbots.models import Binding, ChannelBot, ChannelIdentity


@admin.register(ChannelBot)
class ChannelBotAdmin(UUIDSearchMixin, ReadOnlyAdmin):
    list_display = ("name", "platform", "org", "transport", "is_paused", "connection_state", "agent_served",
                    "credentials_set", "created_at")
    list_filter = ("platform", "transport", "is_paused", "connection_state")
    search_fields = ("name", "organization__name", "platform_bot_username", "api_base_url")
    list_select_related = ("organization", "binding", "binding__agent")
    fields = ("name", "platform", "organization", "api_base_url", "transport", "access_policy", "stt_provider",
              "stt_model", "stt_profile", "is_paused", "connection_state", "connection_reason", "platform_bot_user_id",
              "platform_bot_username", "created_by", "created_at", "updated_at")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(credential_count=Count("credentials", distinct=True))

    @admin.display(description="organization", ordering="organization__name")
    def org(self, obj: ChannelBot) -> str:
        return admin_link(obj.organization)

    @admin.display(description="agent")
    def agent_served(self, obj: ChannelBot) -> str:
        binding = getattr(obj, "binding", None)
        return admin_link(binding.agent) if binding is not None else "–"

    @admin.display(description="credentials")
    def credentials_set(self, obj: ChannelBot) -> int:
        return getattr(obj, "credential_count", 0)


@admin.register(Binding)
class BindingAdmin(UUIDSearchMixin, ReadOnlyAdmin):
    list_display = ("agent_link", "bot_link", "org", "environment", "footer_mode", "workspace_scope", "created_at")
    list_filter = ("footer_mode", "bot__platform")
    search_fields = ("agent__name", "bot__name", "organization__name")
    list_select_related = ("organization", "agent", "bot")

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: Binding) -> str:
        return admin_link(obj.agent)

    @admin.display(description="bot", ordering="bot__name")
    def bot_link(self, obj: Binding) -> str:
        return admin_link(obj.bot)

    @admin.display(description="organization")
    def org(self, obj: Binding) -> str:
        return admin_link(obj.organization)


@admin.register(ChannelIdentity)
class ChannelIdentityAdmin(ReadOnlyAdmin):
    """Chat accounts: a platform account and the member it is linked to (none = unlinked)."""

    list_display = ("display_name", "platform", "account_id", "org", "member", "linked_at", "created_at")
    list_filter = ("platform",)
    search_fields = ("display_name", "account_id", "user__email", "organization__name")
    list_select_related = ("organization", "user")

    @admin.display(description="organization")
    def org(self, obj: ChannelIdentity) -> str:
        return admin_link(obj.organization)

    @admin.display(description="member", ordering="user__email")
    def member(self, obj: ChannelIdentity) -> str:
        if obj.user is None:
            return "unlinked"
        return admin_link(obj.user, obj.user.email)

