"""API routes of remote agents (included by config/api_urls.py)."""

from agenticos.api import route
from capabilities.remote_agents import api

api_routes = [
    *route("remote-agents", api.RemoteAgentListView, "api-remote-agents"),
    *route("remote-agents/<uuid:pk>", api.RemoteAgentDetailView, "api-remote-agent"),
]
