"""HTTP routes of the embeds app, with their full paths: include at the site root —
`path("", include("embeds.urls"))` in agenticos/urls.py."""

from __future__ import annotations

from django.urls import path

from embeds import api, views

urlpatterns = [
    # Management (session or API key, X-Organization-Id).
    path("api/v1/agents/<str:agent_id>/embeds", api.AgentEmbedsView.as_view(), name="agent-embeds"),
    path("api/v1/embeds/<str:embed_id>", api.EmbedDetailView.as_view(), name="embed-detail"),
    path("api/v1/embeds/<str:embed_id>/pause", api.EmbedPauseView.as_view(), name="embed-pause"),
    path("api/v1/embeds/<str:embed_id>/resume", api.EmbedResumeView.as_view(), name="embed-resume"),
    path("api/v1/embeds/<str:embed_id>/logo", api.EmbedLogoView.as_view(), name="embed-logo-upload"),
    # Public (no session).
    path("api/v1/embed/<str:key>/widget.js", views.widget_js, name="embed-widget-js"),
    path("api/v1/embed/<str:key>/config", views.page_config_json, name="embed-page-config"),
    path("api/v1/embed/<str:key>/logo", views.logo, name="embed-logo"),
    path("api/v1/embed/<str:key>/files", views.upload, name="embed-upload"),
    path("e/<str:key>", views.hosted_page, name="embed-page"),
]
