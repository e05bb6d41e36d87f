"""Console routes of Apps (included in config.urls before the console's own)."""

from django.urls import path

from console import applications as apps

app_name = "console-apps"

urlpatterns = [
    path("apps/", apps.app_list, name="list"),
    path("apps/<uuid:artifact_id>/", apps.app_detail, name="detail"),
    path("apps/<uuid:artifact_id>/raw", apps.app_raw, name="raw"),
    path("apps/<uuid:artifact_id>/share", apps.app_share, name="share"),
    path("apps/lib/<str:name>", apps.app_library, name="library"),
    path("apps/frame", apps.visual_frame, name="visual-frame"),
]
