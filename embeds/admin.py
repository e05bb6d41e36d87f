"""Operator console for embeds: find one by key, see what it serves, pause or resume many at once.
Config changes go through the management API (services validate them); the console only pauses."""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agenticos import audit
from agenticos.admin import admin_link
from embeds.models import Embed, EmbedFile


@admin.register(Embed)
class EmbedAdmin(admin.ModelAdmin):
    list_display = (
        "public_key", "kind", "agent_link", "organization_link", "environment", "auth_mode", "is_paused",
        "rate_limit_per_minute", "monthly_budget_usd", "created_at",
    )
    list_filter = ("kind", "auth_mode", "is_paused", "organization")
    search_fields = ("public_key", "name", "agent__name", "organization__name")
    list_select_related = ("agent", "organization")
    actions = ["pause", "resume"]
    readonly_fields = [f.name for f in Embed._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return request.user.is_superuser

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: Embed) -> str:
        return admin_link(obj.agent)

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Embed) -> str:
        return admin_link(obj.organization)

    @admin.action(description="Pause the selected embeds (takes effect on the next connect)")
    def pause(self, request, queryset: QuerySet[Embed]) -> None:
        _set_paused(request, queryset, True)

    @admin.action(description="Resume the selected embeds")
    def resume(self, request, queryset: QuerySet[Embed]) -> None:
        _set_paused(request, queryset, False)


def _set_paused(request, queryset: QuerySet[Embed], paused: bool) -> None:
    with transaction.atomic():
        for embed in queryset.select_related("organization"):
            Embed.objects.filter(pk=embed.pk).update(is_paused=paused, updated_at=timezone.now())
            audit.record(
                actor=request.user,
                organization=embed.organization,
                action="embed.pause" if paused else "embed.resume",
                target=embed,
                details={"via": "operator console"},
            )


@admin.register(EmbedFile)
class EmbedFileAdmin(admin.ModelAdmin):
    list_display = ("created_at", "name", "mime", "size", "embed", "attached_at")
    list_filter = ("mime",)
    search_fields = ("name", "embed__public_key")
    readonly_fields = [f.name for f in EmbedFile._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
