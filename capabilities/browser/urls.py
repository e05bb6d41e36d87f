from django.urls import path

from capabilities.browser import views

app_name = "browser"

urlpatterns = [path("browse/<uuid:run_id>/<str:call_id>", views.browse_live, name="live")]
