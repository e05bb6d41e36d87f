"""/api/v1/ notifications."""

from agenticos.api import route
from notifications import api

urlpatterns = [
    *route("notifications", api.NotificationListView, "api-notifications"),
    *route("notifications/read", api.NotificationReadAllView, "api-notifications-read"),
    *route("notifications/<uuid:notification_id>/read", api.NotificationReadView, "api-notification-read"),
]
