"""WebSocket routes of the embeds app (included by agenticos/routing.py)."""

from __future__ import annotations

from django.urls import path

from embeds.consumers import EmbedConsumer

websocket_urlpatterns = [
    path("api/v1/embed/<str:key>/ws", EmbedConsumer.as_asgi()),
]
