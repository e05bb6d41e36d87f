"""The project's routes plus the console's, until config.urls includes the console itself."""

from django.urls import include, path

from config.urls import urlpatterns as project_patterns

_included = any(getattr(p, "namespace", None) == "console" for p in project_patterns)
urlpatterns = [*project_patterns] + ([] if _included else [path("", include("console.urls"))])
