"""Mounted by agenticos/urls.py under /api/v1/."""

from django.urls import path

from capabilities import api

urlpatterns = [
    path("agents/capabilities", api.CapabilityCatalogView.as_view(), name="capability-catalog"),
    path("agents/capabilities/", api.CapabilityCatalogView.as_view(), name="capability-catalog-slash"),
    path("conversations/<uuid:conversation_id>/workspace", api.ConversationWorkspaceView.as_view(),
         name="conversation-workspace"),
    path("conversations/<uuid:conversation_id>/workspace/file", api.ConversationWorkspaceFileView.as_view(),
         name="conversation-workspace-file"),
    path("conversations/<uuid:conversation_id>/workspace/raw", api.ConversationWorkspaceRawView.as_view(),
         name="conversation-workspace-raw"),
]
