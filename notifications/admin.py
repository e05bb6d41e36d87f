"""Notifications in the operator console: read-only (they are written by the services that notify)."""

from __future__ import annotations

from django.contrib import admin

from agenticos.admin import ReadOnlyAdmin, admin_link
from notifications.models import Notification


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("text", "kind", "recipient_link", "organization_link", "created_at", "read_at")
    list_filter = ("kind", ("read_at", admin.EmptyFieldListFilter))
    search_fields = ("text", "recipient__email", "organization__name")
    list_select_related = ("organization", "recipient")
    fields = ("organization", "recipient", "kind", "text", "link", "created_at", "read_at")

    @admin.display(description="recipient", ordering="recipient__email")
    def recipient_link(self, obj: Notification) -> str:
        return admin_link(obj.recipient)

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Notification) -> str:
        return admin_link(obj.organization)
