"""Test-only urlconf: the catalog mounted where config/urls.py will mount it (/api/v1/)."""

from django.urls import include, path

urlpatterns = [path("api/v1/", include("capabilities.urls"))]
