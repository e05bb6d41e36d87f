"""Operator console for tools from outside the code: custom REST tools, builder sessions, kits and drafts,
database and MCP connections, spilled tool output (stored workspaces: workspaces/admin.py).

Everything here is read-only (rows change through the services, which enforce the slot budget, the address
policy and the lifecycle); an operator may delete a row, and that is audited. Nothing sealed or secret is
ever shown: credentials appear as a link to the vault secret (name and hint only), a database DSN not at
all, fixed parameter values and URL query strings (where a key may hide) are replaced by a mark, and a
draft's full test response or a spilled output only by its size.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from agenticos.admin import ReadAndDeleteAdmin, admin_link, changelist_link, url_without_query
from capabilities.models import (
    CustomTool,
    DatabaseConnection,
    McpConnection,
    McpCredential,
    SpilledOutput,
    ToolBuilderSession,
    ToolDraft,
    ToolKit,
)


def parameters_summary(parameters: Any) -> str:
    """Name, location, type and mode of each parameter; a fixed value is never shown."""
    if not isinstance(parameters, list) or not parameters:
        return "–"
    rows = []
    for param in parameters:
        if not isinstance(param, dict):
            continue
        mode = "fixed (value hidden)" if param.get("mode") == "fixed" else "AI-visible"
        required = ", required" if param.get("required") else ""
        rows.append((str(param.get("name", "?")), str(param.get("location", "?")), str(param.get("type", "string")),
                     mode, required))
    return format_html_join("", "<div>{} ({}, {}) — {}{}</div>", rows) or "–"


def auth_summary(auth: Any) -> str:
    """The auth family and where the credential goes; the credential itself lives in the vault."""
    if not isinstance(auth, dict) or auth.get("family", "none") == "none":
        return "none"
    family = auth["family"]
    where = {
        "header": auth.get("header_name", "Authorization"),
        "query": f"query parameter {auth.get('query_name', 'api_key')}",
        "hmac": f"signature header {auth.get('signature_header', 'X-Signature')}",
        "jwt": f"{auth.get('jwt_algorithm', 'HS256')} token in {auth.get('header_name', 'Authorization')}",
    }.get(family, "")
    return f"{family}: {where}" if where else str(family)


@admin.register(CustomTool)
class CustomToolAdmin(ReadAndDeleteAdmin):
    list_display = ("name", "alias", "organization_link", "method", "url_display", "auth_display", "credential_link",
                    "kit_name", "updated_at")
    list_filter = ("organization", "method", "template_key")
    search_fields = ("name", "alias", "description", "kit_name", "template_key", "organization__name")
    list_select_related = ("organization", "credential", "created_by")
    fields = ("organization", "name", "alias", "description", "usage_notes", "method", "url_display",
              "parameters_display", "auth_display", "credential_link", "tags", "warnings", "timeout_secs",
              "kit_name", "template_key", "created_by_link", "created_at", "updated_at")
    readonly_fields = fields

    @admin.display(description="URL")
    def url_display(self, obj: CustomTool) -> str:
        return url_without_query(obj.url)

    @admin.display(description="parameters")
    def parameters_display(self, obj: CustomTool) -> str:
        return parameters_summary(obj.parameters)

    @admin.display(description="auth")
    def auth_display(self, obj: CustomTool) -> str:
        return auth_summary(obj.auth)

    @admin.display(description="credential")
    def credential_link(self, obj: CustomTool) -> str:
        return admin_link(obj.credential)


class ReadOnlyInline(admin.TabularInline):
    """Rows shown under their parent, each a link to its own page; nothing added or removed here."""

    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ToolKitInline(ReadOnlyInline):
    model = ToolKit
    fields = ("name", "provider", "status", "created_at", "finalized_at")
    readonly_fields = fields


@admin.register(ToolBuilderSession)
class ToolBuilderSessionAdmin(ReadAndDeleteAdmin):
    list_display = ("__str__", "organization_link", "kits_count", "conversation_link", "created_by_link", "created_at")
    list_filter = ("organization",)
    search_fields = ("title", "organization__name")
    list_select_related = ("organization", "conversation", "created_by")
    fields = ("organization", "title", "conversation_link", "created_by_link", "created_at")
    readonly_fields = fields
    inlines = (ToolKitInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ToolBuilderSession]:
        return super().get_queryset(request).annotate(kit_count=Count("kits"))

    @admin.display(description="kits", ordering="kit_count")
    def kits_count(self, obj: Any) -> str:
        return changelist_link(ToolKit, obj.kit_count, session__id__exact=obj.pk)

    @admin.display(description="conversation")
    def conversation_link(self, obj: ToolBuilderSession) -> str:
        return admin_link(obj.conversation)


class ToolDraftInline(ReadOnlyInline):
    model = ToolDraft
    fields = ("name", "state", "test_ok", "test_status", "tested_at")
    readonly_fields = fields


@admin.register(ToolKit)
class ToolKitAdmin(ReadAndDeleteAdmin):
    list_display = ("name", "provider", "organization_link", "status", "drafts_count", "credential_link",
                    "session_link", "created_at", "finalized_at")
    list_filter = ("organization", "status")
    search_fields = ("name", "provider", "organization__name")
    list_select_related = ("organization", "credential", "session")
    fields = ("organization", "name", "provider", "status", "session_link", "credential_link", "warnings",
              "created_at", "finalized_at")
    readonly_fields = fields
    inlines = (ToolDraftInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ToolKit]:
        return super().get_queryset(request).annotate(draft_count=Count("drafts"))

    @admin.display(description="drafts", ordering="draft_count")
    def drafts_count(self, obj: Any) -> str:
        return changelist_link(ToolDraft, obj.draft_count, kit__id__exact=obj.pk)

    @admin.display(description="credential")
    def credential_link(self, obj: ToolKit) -> str:
        return admin_link(obj.credential)

    @admin.display(description="builder session")
    def session_link(self, obj: ToolKit) -> str:
        return admin_link(obj.session)


@admin.register(ToolDraft)
class ToolDraftAdmin(ReadAndDeleteAdmin):
    list_display = ("name", "state", "organization_link", "kit_link", "test_ok", "test_status", "tested_at",
                    "created_tool_link")
    list_filter = ("organization", "state", "test_ok")
    search_fields = ("name", "kit__name", "organization__name")
    list_select_related = ("organization", "kit", "created_tool")
    fields = ("organization", "kit_link", "name", "state", "definition_display", "warnings", "test_ok",
              "test_status", "test_preview", "test_full_size", "test_error", "tested_at", "created_tool_link",
              "created_at")
    readonly_fields = fields

    @admin.display(description="kit")
    def kit_link(self, obj: ToolDraft) -> str:
        return admin_link(obj.kit)

    @admin.display(description="created tool")
    def created_tool_link(self, obj: ToolDraft) -> str:
        return admin_link(obj.created_tool)

    @admin.display(description="definition")
    def definition_display(self, obj: ToolDraft) -> str:
        definition = obj.definition if isinstance(obj.definition, dict) else {}
        if not definition:
            return "–"
        head = f"{definition.get('method', 'GET')} {url_without_query(str(definition.get('url', '')))}"
        return format_html("<div>{}</div><div>auth {}</div>{}", head, auth_summary(definition.get("auth")),
                           parameters_summary(definition.get("parameters")))

    @admin.display(description="full test response")
    def test_full_size(self, obj: ToolDraft) -> str:
        return f"{len(obj.test_full):,} characters (kept for review through the API)" if obj.test_full else "–"


@admin.register(DatabaseConnection)
class DatabaseConnectionAdmin(ReadAndDeleteAdmin):
    """The DSN is sealed; it is neither shown nor decrypted here."""

    list_display = ("name", "organization_link", "engine", "permission", "key_version", "statement_timeout_ms",
                    "row_cap", "created_at")
    list_filter = ("organization", "engine", "permission", "key_version")
    search_fields = ("name", "organization__name")
    list_select_related = ("organization",)
    fields = ("organization", "name", "engine", "permission", "dsn_display", "key_version", "statement_timeout_ms",
              "row_cap", "created_by_link", "created_at")
    readonly_fields = fields

    @admin.display(description="DSN")
    def dsn_display(self, obj: DatabaseConnection) -> str:
        return "sealed in the vault (never shown)"


@admin.register(McpConnection)
class McpConnectionAdmin(ReadAndDeleteAdmin):
    list_display = ("name", "organization_link", "transport", "url_display", "tool_count", "credential_link",
                    "checked_at")
    list_filter = ("organization", "transport")
    search_fields = ("name", "url", "organization__name")
    list_select_related = ("organization", "auth_secret")
    fields = ("organization", "name", "transport", "url_display", "auth_header", "credential_link", "tools_display",
              "checked_at", "created_by_link", "created_at")
    readonly_fields = fields

    @admin.display(description="URL")
    def url_display(self, obj: McpConnection) -> str:
        return url_without_query(obj.url)

    @admin.display(description="tools")
    def tool_count(self, obj: McpConnection) -> int:
        return len(obj.tools or [])

    @admin.display(description="tools at the last check")
    def tools_display(self, obj: McpConnection) -> str:
        names = [(str(t.get("name", "?")),) for t in obj.tools or [] if isinstance(t, dict)]
        return format_html_join(", ", "{}", names) or "–"

    @admin.display(description="credential")
    def credential_link(self, obj: McpConnection) -> str:
        return admin_link(obj.auth_secret)


@admin.register(McpCredential)
class McpCredentialAdmin(ReadAndDeleteAdmin):
    """Who connected which catalog service (the organization, or a person) and when its token expires; the
    sealed client and tokens are never shown. Deleting one disconnects without revoking at the provider."""

    list_display = ("connection_link", "organization_link", "user", "connected_at", "expires_at", "refreshed_at")
    list_filter = ("organization", "connection__catalog_key")
    search_fields = ("connection__name", "organization__name", "user__email")
    list_select_related = ("organization", "connection", "user")
    fields = ("organization", "connection_link", "user", "connected_at", "expires_at", "refreshed_at", "created_at")
    readonly_fields = fields

    @admin.display(description="connection")
    def connection_link(self, obj: McpCredential) -> str:
        return admin_link(obj.connection)


@admin.register(SpilledOutput)
class SpilledOutputAdmin(ReadAndDeleteAdmin):
    """Which runs hold spilled tool output and how much; the content itself is not shown."""

    list_display = ("handle", "run_link", "organization_link", "size", "created_at")
    list_filter = ("organization",)
    search_fields = ("handle",)
    uuid_search_fields = ("run__id",)
    list_select_related = ("organization", "run")
    fields = ("organization", "run_link", "handle", "size", "created_at")
    readonly_fields = fields

    @admin.display(description="run")
    def run_link(self, obj: SpilledOutput) -> str:
        return admin_link(obj.run)
