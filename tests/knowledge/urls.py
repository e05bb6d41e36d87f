"""The project's URLs plus the knowledge app's (the lead wires `knowledge.urls` into config/urls.py)."""

from django.urls import include, path

from config.urls import urlpatterns as project_urlpatterns

urlpatterns = [path("api/v1/", include("knowledge.urls")), *project_urlpatterns]
