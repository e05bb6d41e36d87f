"""WebSocket routes of the embeds app (included by config/routing.py)."""

from __future__ import annotations

from django.urls import re_path

from embeds.consumers import PUBLIC_KEY_PATTERN, EmbedConsumer

websocket_urlpatterns = [
    # Anything under the prefix that is not a well-formed key — no key, a NUL byte, another path — still
    # reaches the consumer, keyless, and is refused with 4003 like an unknown key: without a route the
    # router raised and the handshake was an HTTP 500.
    re_path(rf"^api/v1/embed/(?P<key>{PUBLIC_KEY_PATTERN})/ws$", EmbedConsumer.as_asgi()),
    re_path(r"^api/v1/embed(?:/|$)", EmbedConsumer.as_asgi()),
]
