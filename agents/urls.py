"""/api/v1/ agent endpoints."""

from django.urls import path

from agents import api

urlpatterns = [
    path("model-profiles/", api.ModelProfileListView.as_view(), name="api-model-profiles"),
    path("model-profiles/<uuid:pk>/", api.ModelProfileDetailView.as_view(), name="api-model-profile"),
    path("agents/", api.AgentListView.as_view(), name="api-agents"),
    path("agents/import/", api.AgentImportView.as_view(), name="api-agents-import"),
    path("agents/<uuid:pk>/", api.AgentDetailView.as_view(), name="api-agent"),
    path("agents/<uuid:pk>/publish/", api.AgentPublishView.as_view(), name="api-agent-publish"),
    path("agents/<uuid:pk>/versions/", api.AgentVersionListView.as_view(), name="api-agent-versions"),
    path("agents/<uuid:pk>/versions/<int:number>/", api.AgentVersionDetailView.as_view(), name="api-agent-version"),
    path("agents/<uuid:pk>/diff/", api.AgentDiffView.as_view(), name="api-agent-diff"),
    path("agents/<uuid:pk>/environments/", api.AgentEnvironmentListView.as_view(), name="api-agent-environments"),
    path(
        "agents/<uuid:pk>/environments/<slug:name>/promote/",
        api.AgentPromoteView.as_view(),
        name="api-agent-promote",
    ),
    path("agents/<uuid:pk>/export/", api.AgentExportView.as_view(), name="api-agent-export"),
    path("agents/<uuid:pk>/grants/", api.AgentGrantListView.as_view(), name="api-agent-grants"),
    path("agents/<uuid:pk>/grants/<int:user_id>/", api.AgentGrantDetailView.as_view(), name="api-agent-grant"),
]
