"""/api/v1/ agent endpoints."""

from django.urls import path

from agents import api

urlpatterns = [
    path("model-profiles/", api.ModelProfileListView.as_view(), name="api-model-profiles"),
    path("model-profiles/<str:pk>/", api.ModelProfileDetailView.as_view(), name="api-model-profile"),
    path("agents/", api.AgentListView.as_view(), name="api-agents"),
    path("agents/import/", api.AgentImportView.as_view(), name="api-agents-import"),
    path("agents/<str:pk>/", api.AgentDetailView.as_view(), name="api-agent"),
    path("agents/<str:pk>/publish/", api.AgentPublishView.as_view(), name="api-agent-publish"),
    path("agents/<str:pk>/versions/", api.AgentVersionListView.as_view(), name="api-agent-versions"),
    path("agents/<str:pk>/versions/<str:number>/", api.AgentVersionDetailView.as_view(), name="api-agent-version"),
    path("agents/<str:pk>/diff/", api.AgentDiffView.as_view(), name="api-agent-diff"),
    path("agents/<str:pk>/environments/", api.AgentEnvironmentListView.as_view(), name="api-agent-environments"),
    path(
        "agents/<str:pk>/environments/<str:name>/promote/",
        api.AgentPromoteView.as_view(),
        name="api-agent-promote",
    ),
    path("agents/<str:pk>/export/", api.AgentExportView.as_view(), name="api-agent-export"),
    path("agents/<str:pk>/grants/", api.AgentGrantListView.as_view(), name="api-agent-grants"),
    path("agents/<str:pk>/grants/<str:user_id>/", api.AgentGrantDetailView.as_view(), name="api-agent-grant"),
]
