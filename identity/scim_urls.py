"""/scim/v2/ (included by config.urls): SCIM 2.0 provisioning, authenticated by an organization's SCIM token."""

from django.urls import path

from identity import scim

urlpatterns = [
    path("Users", scim.users, name="scim-users"),
    path("Users/<str:pk>", scim.user, name="scim-user"),
    path("Groups", scim.groups, name="scim-groups"),
    path("Groups/<str:pk>", scim.group, name="scim-group"),
    path("ServiceProviderConfig", scim.service_provider_config, name="scim-config"),
    path("ResourceTypes", scim.resource_types, name="scim-resource-types"),
]
