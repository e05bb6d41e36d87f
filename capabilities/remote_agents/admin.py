"""Operator console for remote agents: shown, searched and deletable (audited), never added or edited here —
a registration changes through the services, which read its card through the address checks. Addresses are
shown without query or userinfo (a signed card URL carries its credential there); the key only as a link to
its vault secret."""

from __future__ import annotations

from django.contrib import admin

from agenticos.admin import ReadAndDeleteAdmin, admin_link
from capabilities.remote_agents.client import shown_url
from capabilities.remote_agents.models import RemoteAgent


@admin.register(RemoteAgent)
class RemoteAgentAdmin(ReadAndDeleteAdmin):
    list_display = ("name", "organization_link", "endpoint_display", "key_link", "created_by_link", "checked_at")
    list_filter = ("organization",)
    search_fields = ("name", "description", "endpoint_url", "organization__name")
    list_select_related = ("organization", "secret", "created_by")
    fields = ("organization", "name", "description", "card_display", "endpoint_display", "key_link",
              "created_by_link", "created_at", "checked_at")
    readonly_fields = fields

    @admin.display(description="card")
    def card_display(self, obj: RemoteAgent) -> str:
        return shown_url(obj.card_url)

    @admin.display(description="endpoint")
    def endpoint_display(self, obj: RemoteAgent) -> str:
        return shown_url(obj.endpoint_url)

    @admin.display(description="key")
    def key_link(self, obj: RemoteAgent) -> str:
        return admin_link(obj.secret)
