"""The operator console's view of generated files: searchable and read-only. A file leaves with its conversation
or the retention sweep (which also delete it from storage); a row deleted here would leave its bytes behind."""

from __future__ import annotations

from django.contrib import admin
from django.template.defaultfilters import filesizeformat

from agenticos.admin import ReadOnlyAdmin, UUIDSearchMixin, admin_link
from media.models import GeneratedMedia


@admin.register(GeneratedMedia)
class GeneratedMediaAdmin(UUIDSearchMixin, ReadOnlyAdmin):
    uuid_search_fields = ("id", "run__id", "conversation__id", "organization__id")
    list_display = ("created_at", "filename", "organization_link", "kind", "media_type", "file_size", "provider",
                    "model", "run_link", "conversation_link")
    list_filter = ("kind", "provider", "created_at", "organization")
    search_fields = ("filename", "name", "model", "sha256")
    list_select_related = ("organization", "run", "conversation")
    date_hierarchy = "created_at"
    fields = ("id", "created_at", "organization", "run", "conversation", "kind", "filename", "name", "media_type",
              "size", "sha256", "path", "workspace_path", "provider", "model")

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: GeneratedMedia) -> str:
        return admin_link(obj.organization)

    @admin.display(description="size", ordering="size")
    def file_size(self, obj: GeneratedMedia) -> str:
        return filesizeformat(obj.size)

    @admin.display(description="run")
    def run_link(self, obj: GeneratedMedia) -> str:
        return admin_link(obj.run, str(obj.run_id)[:8] if obj.run_id else None)

    @admin.display(description="conversation")
    def conversation_link(self, obj: GeneratedMedia) -> str:
        return admin_link(obj.conversation, str(obj.conversation_id)[:8] if obj.conversation_id else None)
