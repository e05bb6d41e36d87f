"""Every WebSocket route. Each app exposes its own `websocket_urlpatterns`."""

from __future__ import annotations

from agents.routing import websocket_urlpatterns as agent_routes
from calls.routing import websocket_urlpatterns as call_routes
from capabilities.browser.routing import websocket_urlpatterns as browse_routes
from embeds.routing import websocket_urlpatterns as embed_routes

websocket_urlpatterns: list = [*agent_routes, *embed_routes, *browse_routes, *call_routes]
