"""Test ASGI app: the project's own stack (auth middleware, URL router) with this app's routes added,
until config/routing.py includes them. Also what the daphne subprocess serves in the live tests."""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

from config.asgi import SameOriginSockets  # noqa: E402
from config.routing import websocket_urlpatterns as project_routes  # noqa: E402
from embeds.routing import websocket_urlpatterns as embed_routes  # noqa: E402

if os.environ.get("EMBEDS_TEST_URLCONF"):
    settings.ROOT_URLCONF = "tests.embeds.urls"

application = ProtocolTypeRouter(
    {
        # /static/ served as config.asgi serves it: the widget and the hosted page load the turn renderer there.
        "http": ASGIStaticFilesHandler(get_asgi_application()),
        "websocket": SameOriginSockets(AuthMiddlewareStack(URLRouter([*embed_routes, *project_routes]))),
    }
)
