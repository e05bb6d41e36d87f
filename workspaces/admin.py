"""Operator console for stored workspaces and sandbox connections: read-only, deletable (audited); file
names and sizes, never their content; a connection's token linked (name and hint), never shown."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet, Sum
from django.http import HttpRequest
from django.utils.html import format_html_join

from agenticos.admin import ReadAndDeleteAdmin, admin_link, url_without_query
from workspaces.models import SandboxConnection, Workspace


@admin.register(Workspace)
class WorkspaceAdmin(ReadAndDeleteAdmin):
    """Stored workspaces (capability sandbox, backend state): whose, how many files, how full; file names and
    sizes on the change page, never their content. Deleting one deletes its files (audited)."""

    list_display = ("label", "organization_link", "agent_link", "scope", "key", "file_count", "bytes_used",
                    "last_used_at")
    list_filter = ("organization", "scope")
    search_fields = ("label", "key", "agent__name")
    uuid_search_fields = ("id", "agent__id")
    list_select_related = ("organization", "agent")
    fields = ("organization", "agent_link", "backend", "scope", "key", "label", "created_at", "last_used_at",
              "files_listing")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Workspace]:
        return super().get_queryset(request).annotate(n_files=Count("files"), n_bytes=Sum("files__size"))

    @admin.display(description="agent")
    def agent_link(self, obj: Workspace) -> str:
        return admin_link(obj.agent)

    @admin.display(description="files", ordering="n_files")
    def file_count(self, obj: Workspace) -> int:
        return int(getattr(obj, "n_files", 0) or 0)

    @admin.display(description="bytes", ordering="n_bytes")
    def bytes_used(self, obj: Workspace) -> int:
        return int(getattr(obj, "n_bytes", 0) or 0)

    @admin.display(description="files (names and sizes only)")
    def files_listing(self, obj: Workspace) -> str:
        rows = obj.files.filter(is_dir=False).order_by("path").values_list("path", "size")[:500]
        return format_html_join("", "<div>{} — {} bytes</div>", rows) or "–"


@admin.register(SandboxConnection)
class SandboxConnectionAdmin(ReadAndDeleteAdmin):
    """Where an organization's service workspaces run. The token is an organization secret (linked, never
    shown); the deployment's own sandboxd has no stored URL (SANDBOXD_URL)."""

    list_display = ("name", "organization_link", "kind", "is_deployment", "is_default", "url_display",
                    "credential_link", "created_at")
    list_filter = ("kind", "is_deployment", "is_default")
    search_fields = ("name", "url", "organization__name")
    list_select_related = ("organization", "secret")
    fields = ("organization", "name", "kind", "is_deployment", "is_default", "url_display", "credential_link",
              "created_by_link", "created_at")
    readonly_fields = fields

    @admin.display(description="URL")
    def url_display(self, obj: SandboxConnection) -> str:
        return "SANDBOXD_URL (this deployment's)" if obj.is_deployment else url_without_query(obj.url)

    @admin.display(description="credential")
    def credential_link(self, obj: SandboxConnection) -> str:
        return admin_link(obj.secret) if obj.secret_id else "none"
