"""Operator console: suite runs and their results, read-only (the ledger of what was evaluated and spent)."""

from __future__ import annotations

from django.contrib import admin

from agenticos.admin import ReadOnlyAdmin, UUIDSearchMixin, admin_link
from evals.models import CaseResult, SuiteRun


class CaseResultInline(admin.TabularInline):
    model = CaseResult
    fields = ("case_name", "status", "run_status", "reason", "cost_usd", "judge_cost_usd", "duration_ms")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SuiteRun)
class SuiteRunAdmin(UUIDSearchMixin, ReadOnlyAdmin):
    list_display = ("suite_name", "agent_link", "organization", "target", "purpose", "status", "passed", "failed",
                    "skipped", "cost_usd", "created_at")
    list_filter = ("status", "purpose")
    search_fields = ("suite_name", "agent__name", "organization__name")
    list_select_related = ("organization", "agent")
    inlines = (CaseResultInline,)

    @admin.display(description="agent")
    def agent_link(self, obj: SuiteRun) -> str:
        return admin_link(obj.agent)
