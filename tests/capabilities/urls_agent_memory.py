"""Test-only urlconf: the project's routes plus the agent-memory clear endpoint, mounted where
knowledge/urls.py is to mount it (`*route("memory/agents/<uuid:agent_id>/clear", ...)` under /api/v1/)."""

from django.urls import include, path

from agenticos.api import route
from knowledge.api_agent_memory import AgentMemoryClearView

urlpatterns = [
    *route("api/v1/memory/agents/<uuid:agent_id>/clear", AgentMemoryClearView, "api-memory-agent-clear"),
    path("", include("agenticos.urls")),
]
