"""/api/v1/sandbox-connections (Settings → Sandboxes)."""

from agenticos.api import route
from workspaces import api

urlpatterns = [
    *route("sandbox-connections", api.ConnectionListView, "api-sandbox-connections"),
    *route("sandbox-connections/<uuid:pk>", api.ConnectionDetailView, "api-sandbox-connection"),
    *route("sandbox-connections/<uuid:pk>/default", api.ConnectionDefaultView, "api-sandbox-connection-default"),
    *route("sandbox-connections/<uuid:pk>/runtimes", api.ConnectionRuntimesView, "api-sandbox-connection-runtimes"),
    *route("sandbox-connections/<uuid:pk>/sandboxes", api.SandboxListView, "api-sandbox-connection-sandboxes"),
    *route("sandbox-connections/<uuid:pk>/sandboxes/<uuid:workspace_id>", api.SandboxDetailView,
           "api-sandbox-connection-sandbox"),
]
