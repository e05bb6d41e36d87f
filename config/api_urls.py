"""/api/v1/ kernel endpoints."""

from agenticos import api
from agenticos.api import route
from capabilities.remote_agents.urls import api_routes as remote_agent_routes
from media.views import GeneratedFileView

urlpatterns = [
    *route("me", api.MeView, "api-me"),
    *route("organizations", api.OrganizationListView, "api-organizations"),
    *route("organization/logo", api.OrganizationLogoView, "api-organization-logo"),
    *route("invitations/accept", api.AcceptInvitationView, "api-invitation-accept"),
    *route("invitations", api.InvitationListView, "api-invitations"),
    *route("invitations/<int:pk>", api.InvitationDetailView, "api-invitation"),
    *route("members", api.MemberListView, "api-members"),
    *route("members/<int:pk>", api.MemberDetailView, "api-member"),
    *route("api-keys", api.ApiKeyListView, "api-api-keys"),
    *route("api-keys/<int:pk>", api.ApiKeyDetailView, "api-api-key"),
    *route("secrets", api.SecretListView, "api-secrets"),
    *route("secrets/<uuid:pk>", api.SecretDetailView, "api-secret"),
    *route("secrets/<uuid:pk>/rotate", api.SecretRotateView, "api-secret-rotate"),
    *remote_agent_routes,
    *route("generated/<str:filename>", GeneratedFileView, "api-generated-file"),
]
