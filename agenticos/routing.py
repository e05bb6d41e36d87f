"""Every WebSocket route. Each app exposes its own `websocket_urlpatterns`."""

from __future__ import annotations

websocket_urlpatterns: list = []
