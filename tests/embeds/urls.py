"""Test URLconf: the project's routes plus this app's, until config/urls.py includes them."""

from django.urls import include, path

from config.urls import urlpatterns as project_urlpatterns

urlpatterns = [*project_urlpatterns, path("", include("embeds.urls"))]
