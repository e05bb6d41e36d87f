"""/api/v1/ application endpoints (included from config.urls)."""

from agenticos.api import route
from capabilities.artifacts import api

urlpatterns = [
    *route("artifacts", api.ArtifactListView, "api-artifacts"),
    *route("artifacts/<uuid:pk>", api.ArtifactDetailView, "api-artifact"),
    *route("artifacts/<uuid:pk>/versions", api.ArtifactVersionListView, "api-artifact-versions"),
    *route("artifacts/<uuid:pk>/grants", api.ArtifactGrantListView, "api-artifact-grants"),
    *route("artifacts/<uuid:pk>/grants/<int:user_id>", api.ArtifactGrantDetailView, "api-artifact-grant"),
]
