from django.urls import path

from calls.consumers import CallConsumer

websocket_urlpatterns = [path("ws/call/", CallConsumer.as_asgi())]
