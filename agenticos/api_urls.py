"""/api/v1/ kernel endpoints."""

from django.urls import path

from agenticos import api

urlpatterns = [
    path("me/", api.MeView.as_view(), name="api-me"),
    path("organizations/", api.OrganizationListView.as_view(), name="api-organizations"),
    path("invitations/accept/", api.AcceptInvitationView.as_view(), name="api-invitation-accept"),
    path("invitations/", api.InvitationListView.as_view(), name="api-invitations"),
    path("invitations/<str:pk>/", api.InvitationDetailView.as_view(), name="api-invitation"),
    path("members/", api.MemberListView.as_view(), name="api-members"),
    path("members/<str:pk>/", api.MemberDetailView.as_view(), name="api-member"),
    path("api-keys/", api.ApiKeyListView.as_view(), name="api-api-keys"),
    path("api-keys/<str:pk>/", api.ApiKeyDetailView.as_view(), name="api-api-key"),
    path("secrets/", api.SecretListView.as_view(), name="api-secrets"),
    path("secrets/<str:pk>/", api.SecretDetailView.as_view(), name="api-secret"),
    path("secrets/<str:pk>/rotate/", api.SecretRotateView.as_view(), name="api-secret-rotate"),
]
