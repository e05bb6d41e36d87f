from django.urls import path

from interop import mcp_server, openai_views

urlpatterns = [
    path("v1/chat/completions", openai_views.chat_completions, name="openai-chat-completions"),
    path("v1/models", openai_views.list_models, name="openai-models"),
    path("mcp", mcp_server.mcp_endpoint, name="mcp"),
]
