from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from agenticos import health, metrics
from agenticos.errors import json_error
from agenticos.middleware import is_api

api_v1 = [
    path("", include("config.api_urls")),
    path("", include("agents.urls")),
    path("", include("agents.urls_runs")),
    path("", include("governance.urls")),
    path("", include("capabilities.urls")),
    path("", include("capabilities.urls_tools")),
    path("", include("workspaces.urls")),
    path("", include("knowledge.urls")),
    path("", include("triggers.urls")),
    path("", include("evals.urls")),
    path("", include("capabilities.artifacts.urls")),
    path("", include("capabilities.visuals.urls")),
    path("", include("notifications.urls")),
    path("", include("identity.api_urls")),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),
    path("accounts/", include("identity.urls")),  # single sign-on (allauth's OpenID Connect)
    path("scim/v2/", include("identity.scim_urls")),  # SCIM 2.0 provisioning, per organization's token
    path("metrics", metrics.metrics_view, name="metrics"),  # Prometheus, behind METRICS_TOKEN
    # The schema and its page keep their documented slash; the other form answers too.
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/schema", SpectacularAPIView.as_view()),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="api-schema")),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema", template_name="console/api_redoc.html"), name="api-redoc"),
    path("api/redoc", SpectacularRedocView.as_view(url_name="api-schema", template_name="console/api_redoc.html")),
    path("api/v1/", include(api_v1)),
    path("", include("interop.urls")),  # OpenAI-compatible /v1/ (root, as clients expect it)
    path("", include("embeds.urls")),
    path("", include("channelbots.urls")),
    path("", include("console.urls_triggers")),
    path("", include("console.urls_sandboxes")),
    path("", include("console.urls_evals")),
    path("", include("console.urls_replays")),
    path("", include("console.urls_channels")),
    path("", include("console.urls_embeds")),
    path("", include("console.urls_apps")),
    path("", include("console.urls_remote_agents")),
    path("", include("console.urls_tools")),
    path("", include("console.urls_connections")),
    path("", include("console.urls_knowledge")),
    path("", include("console.urls_delegates")),
    path("", include("console.urls_notifications")),
    path("", include("console.urls_browse")),
    path("", include("console.signin")),
    path("", include("console.urls")),
]


def handler404(request, exception=None):
    """API paths answer with the error envelope (with DEBUG on, agenticos.middleware does it: Django's
    technical 404 page skips this handler); console paths with the branded page (templates/404.html)."""
    if is_api(request):
        return json_error(404, "not_found", "Not found.")
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def handler500(request):
    """With DEBUG off, an exception nothing else answered. API paths get the envelope (agenticos.middleware
    maps a view's own; this is the last word for one raised in a middleware around it), console paths the
    branded page (templates/500.html: no traceback, no settings, rendered without the request's context)."""
    if is_api(request):
        return json_error(500, "server_error", "Something went wrong on our side.")
    from django.views.defaults import server_error

    return server_error(request)
