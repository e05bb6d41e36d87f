"""Operator console: triggers with their last and next firing, and the read-only firing log."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from agenticos.admin import AuditedAdmin, ReadOnlyAdmin, UUIDSearchMixin, admin_link, changelist_link
from triggers import services
from triggers.models import Trigger, TriggerFiring


@admin.register(Trigger)
class TriggerAdmin(UUIDSearchMixin, AuditedAdmin):
    list_display = ("name", "kind", "org", "agent_link", "enabled", "schedule", "next_run_at", "last_firing",
                    "firings")
    list_filter = ("kind", "enabled", "overlap", "delivery", "run_as_creator")
    search_fields = ("name", "organization__name", "agent__name", "creator__email")
    list_select_related = ("organization", "agent", "creator")
    # An operator pauses or resumes; what a trigger does is its builder's to change, in the console.
    fields = ("name", "organization", "agent", "environment", "kind", "enabled", "creator", "run_as_creator",
              "cron", "every_seconds", "timezone", "starts_at", "ends_at", "overlap", "next_run_at",
              "last_fired_at", "delivery", "delivery_conversation", "delivery_binding", "delivery_chat_id",
              "delivery_thread", "key", "created_at", "updated_at")
    readonly_fields = tuple(f for f in fields if f != "enabled")
    actions = ("pause", "resume")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def get_queryset(self, request):
        last = TriggerFiring.objects.filter(trigger=OuterRef("pk")).order_by("-created_at", "-id")
        return super().get_queryset(request).annotate(
            last_status=Subquery(last.values("status")[:1]), last_at=Subquery(last.values("created_at")[:1]))

    @admin.display(description="organization", ordering="organization__name")
    def org(self, obj: Trigger) -> str:
        return admin_link(obj.organization)

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: Trigger) -> str:
        return admin_link(obj.agent)

    @admin.display(description="schedule")
    def schedule(self, obj: Trigger) -> str:
        if obj.kind == Trigger.Kind.EVENT:
            return "webhook"
        return f"{obj.cron} ({obj.timezone})" if obj.cron else f"every {obj.every_seconds}s"

    @admin.display(description="last firing")
    def last_firing(self, obj: Trigger) -> str:
        at = getattr(obj, "last_at", None)
        if at is None:
            return "–"
        return f"{timezone.localtime(at):%Y-%m-%d %H:%M} {getattr(obj, 'last_status', '')}"

    @admin.display(description="log")
    def firings(self, obj: Trigger) -> str:
        return changelist_link(TriggerFiring, "firings", trigger__id__exact=obj.pk)

    def save_model(self, request, obj, form, change):
        services.refresh_next_run(obj)
        super().save_model(request, obj, form, change)

    @admin.action(description="Pause the selected triggers")
    def pause(self, request, queryset):
        self._set_enabled(request, queryset, False)

    @admin.action(description="Resume the selected triggers")
    def resume(self, request, queryset):
        self._set_enabled(request, queryset, True)

    def _set_enabled(self, request, queryset, enabled: bool) -> None:
        for trigger in queryset:
            trigger.enabled = enabled
            services.refresh_next_run(trigger)
            trigger.save(update_fields=["enabled", "next_run_at"])
            self._audit(request, trigger, "resume" if enabled else "pause")


@admin.register(TriggerFiring)
class TriggerFiringAdmin(ReadOnlyAdmin):
    list_display = ("due_at", "trigger_link", "org", "source", "status", "reason", "run_link", "created_at")
    list_filter = ("status", "source")
    search_fields = ("trigger__name", "reason")
    list_select_related = ("trigger", "organization", "run")
    date_hierarchy = "due_at"

    @admin.display(description="trigger")
    def trigger_link(self, obj: TriggerFiring) -> str:
        return admin_link(obj.trigger)

    @admin.display(description="organization")
    def org(self, obj: TriggerFiring) -> str:
        return admin_link(obj.organization)

    @admin.display(description="run")
    def run_link(self, obj: TriggerFiring) -> str:
        return admin_link(obj.run, obj.run.status if obj.run else None)
