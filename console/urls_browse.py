from django.urls import path

from console import browse as views

app_name = "browser"

urlpatterns = [path("browse/<uuid:run_id>/<str:call_id>", views.browse_live, name="live")]
