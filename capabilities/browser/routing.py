from django.urls import path

from capabilities.browser.consumers import BrowseLiveConsumer

websocket_urlpatterns = [path("ws/browse/<uuid:run_id>/<str:call_id>/", BrowseLiveConsumer.as_asgi())]
