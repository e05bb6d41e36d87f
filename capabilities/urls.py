"""Mounted by agenticos/urls.py under /api/v1/."""

from django.urls import path

from capabilities import api

urlpatterns = [
    path("agents/capabilities", api.CapabilityCatalogView.as_view(), name="capability-catalog"),
    path("agents/capabilities/", api.CapabilityCatalogView.as_view(), name="capability-catalog-slash"),
]
