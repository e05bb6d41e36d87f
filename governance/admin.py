"""Operator console for governance: the spend ledger, parked approvals and parked questions (all read-only:
spend is written by the runner, approvals and questions are decided where the run can resume)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from guardian.models import UserObjectPermission

from agenticos.admin import ReadOnlyAdmin, UUIDSearchMixin, admin_link
from governance.models import Approval, PendingFileRemoval, Question, RetentionPolicy, SpendEntry


class _RunLinks(UUIDSearchMixin):
    uuid_search_fields = ("id", "run__id")

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj) -> str:
        return admin_link(obj.organization)

    @admin.display(description="run")
    def run_link(self, obj) -> str:
        return admin_link(obj.run, str(obj.run_id)[:8] if obj.run_id else None)


@admin.register(SpendEntry)
class SpendEntryAdmin(_RunLinks, ReadOnlyAdmin):
    list_display = (
        "created_at", "organization_link", "agent_link", "run_link", "surface", "kind", "model",
        "input_tokens", "output_tokens", "cost_usd", "is_partial",
    )
    list_filter = ("surface", "kind", "is_partial", "created_at", "organization")
    search_fields = ("model", "kind", "agent__name")
    list_select_related = ("organization", "agent", "run")
    date_hierarchy = "created_at"
    fields = (
        "created_at", "organization", "agent", "run", "embed_id", "surface", "kind", "model",
        "input_tokens", "output_tokens", "cost_usd", "is_partial",
    )

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: SpendEntry) -> str:
        return admin_link(obj.agent)


@admin.register(Approval)
class ApprovalAdmin(_RunLinks, ReadOnlyAdmin):
    list_display = (
        "created_at", "organization_link", "run_link", "tool_name", "capability_id", "status",
        "decided_by_link", "decided_at",
    )
    list_filter = ("status", "capability_id", "created_at", "organization")
    search_fields = ("tool_name", "tool_id", "capability_id", "tool_call_id")
    list_select_related = ("organization", "run", "decided_by")
    date_hierarchy = "created_at"
    fields = (
        "id", "organization", "run", "tool_call_id", "tool_id", "tool_name", "capability_id", "args",
        "status", "decided_by", "note", "created_at", "decided_at",
    )

    @admin.display(description="decided by")
    def decided_by_link(self, obj: Approval) -> str:
        return admin_link(obj.decided_by)


@admin.register(Question)
class QuestionAdmin(_RunLinks, ReadOnlyAdmin):
    list_display = ("created_at", "organization_link", "run_link", "asked_user_link", "status", "answered_at")
    list_filter = ("status", "created_at", "organization")
    search_fields = ("asked_user__email", "tool_call_id")
    list_select_related = ("organization", "run", "asked_user")
    date_hierarchy = "created_at"
    fields = (
        "id", "organization", "run", "asked_user", "tool_call_id", "questions", "answers", "status",
        "created_at", "answered_at",
    )

    @admin.display(description="asked")
    def asked_user_link(self, obj: Question) -> str:
        return admin_link(obj.asked_user)


# ------------------------------------------------------------------ retention


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(ReadOnlyAdmin):
    """Each organization's own retention values (empty = the deployment default). Read-only: the owner sets
    them in Settings → Data retention, audited (governance.retention.update_retention)."""

    list_display = ("organization_link", "transcript_days", "audit_log_days", "idle_workspace_days",
                    "updated_by_link", "updated_at")
    search_fields = ("organization__name",)
    list_select_related = ("organization", "updated_by")
    fields = ("organization", "transcript_days", "audit_log_days", "idle_workspace_days", "updated_by", "updated_at")

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: RetentionPolicy) -> str:
        return admin_link(obj.organization)

    @admin.display(description="updated by")
    def updated_by_link(self, obj: RetentionPolicy) -> str:
        return admin_link(obj.updated_by)


@admin.register(PendingFileRemoval)
class PendingFileRemovalAdmin(ReadOnlyAdmin):
    """Stored files of deleted conversations and messages waiting for the sweep (a row that stays names a
    file the storage refused to delete)."""

    list_display = ("created_at", "path", "reason", "organization_id")
    list_filter = ("reason",)
    search_fields = ("path",)
    fields = ("created_at", "path", "reason", "organization_id")


# ------------------------------------------------------------------ grants (django-guardian rows)


@admin.register(UserObjectPermission)
class GrantAdmin(ReadOnlyAdmin):
    """Per-object grants, read-only: sharing and revoking go through governance.grants (audited)."""

    list_display = ("user_link", "permission_codename", "content_type", "object_link")
    list_filter = ("permission__codename", "content_type")
    search_fields = ("user__email", "object_pk")
    list_select_related = ("user", "permission", "content_type")

    @admin.display(description="user", ordering="user__email")
    def user_link(self, obj: UserObjectPermission) -> str:
        return admin_link(obj.user)

    @admin.display(description="level", ordering="permission__codename")
    def permission_codename(self, obj: UserObjectPermission) -> str:
        return obj.permission.codename

    @admin.display(description="object")
    def object_link(self, obj: UserObjectPermission) -> str:
        meta = obj.content_type
        try:
            url = reverse(f"admin:{meta.app_label}_{meta.model}_change", args=[obj.object_pk])
        except NoReverseMatch:
            return f"{meta.app_label}.{meta.model}:{obj.object_pk}"
        return format_html('<a href="{}">{}.{} {}</a>', url, meta.app_label, meta.model, obj.object_pk)
