"""HTTP routes of the embeds app, with their full paths: include at the site root —
`path("", include("embeds.urls"))` in config/urls.py."""

from __future__ import annotations

from django.urls import path

from agenticos.api import route
from embeds import api, views

urlpatterns = [
    # Management (session or API key, X-Organization-Id).
    *route("api/v1/agents/<str:agent_id>/embeds", api.AgentEmbedsView, "agent-embeds"),
    *route("api/v1/embeds/<str:embed_id>", api.EmbedDetailView, "embed-detail"),
    *route("api/v1/embeds/<str:embed_id>/pause", api.EmbedPauseView, "embed-pause"),
    *route("api/v1/embeds/<str:embed_id>/resume", api.EmbedResumeView, "embed-resume"),
    *route("api/v1/embeds/<str:embed_id>/logo", api.EmbedLogoView, "embed-logo-upload"),
    # Public (no session).
    *route("api/v1/embed/<str:key>/widget.js", views.widget_js, "embed-widget-js"),
    *route("api/v1/embed/<str:key>/config", views.page_config_json, "embed-page-config"),
    *route("api/v1/embed/<str:key>/logo", views.logo, "embed-logo"),
    *route("api/v1/embed/<str:key>/files", views.upload, "embed-upload"),
    *route("api/v1/embed/<str:key>/generated/<str:filename>", views.generated_file, "embed-generated-file"),
    path("e/<str:key>", views.hosted_page, name="embed-page"),
]
