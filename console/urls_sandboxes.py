"""Settings → Sandboxes (web console)."""

from django.urls import path

from console import sandboxes as console

urlpatterns = [
    path("settings/sandboxes", console.sandboxes, name="sandbox-settings"),
    path("settings/sandboxes/<uuid:connection_id>/default", console.make_default, name="sandbox-settings-default"),
    path("settings/sandboxes/<uuid:connection_id>/delete", console.delete, name="sandbox-settings-delete"),
]
