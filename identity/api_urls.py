"""/api/v1/ routes of the identity app (included by config.urls)."""

from agenticos.api import route
from identity import api

urlpatterns = [
    *route("roles", api.RoleListView, "api-roles"),
    *route("roles/<int:pk>", api.RoleDetailView, "api-role"),
    *route("permissions", api.PermissionListView, "api-permissions"),
    *route("audit", api.AuditListView, "api-audit"),
    *route("audit/export", api.AuditExportView, "api-audit-export"),
    *route("scim-tokens", api.ScimTokenListView, "api-scim-tokens"),
    *route("scim-tokens/<int:pk>", api.ScimTokenDetailView, "api-scim-token"),
]
