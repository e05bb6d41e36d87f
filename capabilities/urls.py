"""Mounted by config/urls.py under /api/v1/."""

from agenticos.api import route
from capabilities import api

urlpatterns = [
    *route("agents/capabilities", api.CapabilityCatalogView, "capability-catalog"),
    *route("conversations/<uuid:conversation_id>/workspace", api.ConversationWorkspaceView,
           "conversation-workspace"),
    *route("conversations/<uuid:conversation_id>/workspace/file", api.ConversationWorkspaceFileView,
           "conversation-workspace-file"),
    *route("conversations/<uuid:conversation_id>/workspace/raw", api.ConversationWorkspaceRawView,
           "conversation-workspace-raw"),
]
