"""Console routes of Connections → Remote agents (included in config.urls before the console's)."""

from django.urls import path

from console import remote_agents

app_name = "console-remote-agents"

urlpatterns = [
    path("remote-agents/", remote_agents.remote_agent_list, name="list"),
    path("remote-agents/<uuid:pk>/", remote_agents.remote_agent_detail, name="detail"),
    path("remote-agents/<uuid:pk>/delete", remote_agents.remote_agent_delete, name="delete"),
]
