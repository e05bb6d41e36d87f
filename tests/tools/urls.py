from django.urls import include, path

urlpatterns = [path("api/v1/", include("capabilities.urls_tools"))]
