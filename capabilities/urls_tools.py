"""Mounted under /api/v1/ (see the report: `path("api/v1/", include("capabilities.urls_tools"))`)."""

from django.urls import path

from capabilities import api_tools as api

urlpatterns = [
    path("tools/", api.ToolListView.as_view(), name="api-tools"),
    path("tools/<uuid:pk>/", api.ToolDetailView.as_view(), name="api-tool"),
    path("tools/<uuid:pk>/test/", api.ToolTestView.as_view(), name="api-tool-test"),
    path("tool-templates/", api.TemplateListView.as_view(), name="api-tool-templates"),
    path("tool-templates/<slug:key>/install/", api.TemplateInstallView.as_view(), name="api-tool-template-install"),
    path("tool-kits/sessions/", api.SessionListView.as_view(), name="api-tool-sessions"),
    path("tool-kits/sessions/<uuid:pk>/", api.SessionDetailView.as_view(), name="api-tool-session"),
    path("tool-kits/sessions/<uuid:pk>/restart/", api.SessionRestartView.as_view(), name="api-tool-session-restart"),
    path("tool-kits/sessions/<uuid:pk>/messages/", api.SessionMessageView.as_view(), name="api-tool-session-messages"),
    path("tool-kits/sessions/<uuid:pk>/kits/", api.KitListView.as_view(), name="api-tool-session-kits"),
    path("tool-kits/<uuid:pk>/drafts/", api.KitDraftListView.as_view(), name="api-tool-kit-drafts"),
    path("tool-kits/<uuid:pk>/finalize/", api.KitFinalizeView.as_view(), name="api-tool-kit-finalize"),
    path("tool-kits/drafts/<uuid:pk>/", api.DraftActionView.as_view(), name="api-tool-draft"),
    path("tool-kits/drafts/<uuid:pk>/<slug:action>/", api.DraftActionView.as_view(), name="api-tool-draft-action"),
    path("db-connections/", api.DbConnectionListView.as_view(), name="api-db-connections"),
    path("db-connections/<uuid:pk>/", api.DbConnectionDetailView.as_view(), name="api-db-connection"),
    path("mcp-connections/", api.McpConnectionListView.as_view(), name="api-mcp-connections"),
    path("mcp-connections/<uuid:pk>/", api.McpConnectionDetailView.as_view(), name="api-mcp-connection"),
    path("mcp-connections/<uuid:pk>/check/", api.McpConnectionCheckView.as_view(), name="api-mcp-connection-check"),
]
