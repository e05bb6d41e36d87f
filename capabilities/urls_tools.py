"""Mounted by config/urls.py under /api/v1/: custom tools, tool kits, database and MCP connections."""

from agenticos.api import route
from capabilities import api_tools as api

urlpatterns = [
    *route("tools", api.ToolListView, "api-tools"),
    *route("tools/<uuid:pk>", api.ToolDetailView, "api-tool"),
    *route("tools/<uuid:pk>/test", api.ToolTestView, "api-tool-test"),
    *route("tool-templates", api.TemplateListView, "api-tool-templates"),
    *route("tool-templates/<slug:key>/install", api.TemplateInstallView, "api-tool-template-install"),
    *route("tool-kits/sessions", api.SessionListView, "api-tool-sessions"),
    *route("tool-kits/sessions/<uuid:pk>", api.SessionDetailView, "api-tool-session"),
    *route("tool-kits/sessions/<uuid:pk>/restart", api.SessionRestartView, "api-tool-session-restart"),
    *route("tool-kits/sessions/<uuid:pk>/kits", api.KitListView, "api-tool-session-kits"),
    *route("tool-kits/<uuid:pk>/drafts", api.KitDraftListView, "api-tool-kit-drafts"),
    *route("tool-kits/<uuid:pk>/finalize", api.KitFinalizeView, "api-tool-kit-finalize"),
    *route("tool-kits/drafts/<uuid:pk>", api.DraftActionView, "api-tool-draft"),
    *route("tool-kits/drafts/<uuid:pk>/<slug:action>", api.DraftActionView, "api-tool-draft-action"),
    *route("db-connections", api.DbConnectionListView, "api-db-connections"),
    *route("db-connections/<uuid:pk>", api.DbConnectionDetailView, "api-db-connection"),
    *route("mcp-connections", api.McpConnectionListView, "api-mcp-connections"),
    *route("mcp-connections/<uuid:pk>", api.McpConnectionDetailView, "api-mcp-connection"),
    *route("mcp-connections/<uuid:pk>/check", api.McpConnectionCheckView, "api-mcp-connection-check"),
    *route("mcp-catalog", api.McpCatalogView, "api-mcp-catalog"),
    *route("mcp-catalog/<slug:key>/connection", api.McpCatalogConnectionView, "api-mcp-catalog-connection"),
]
