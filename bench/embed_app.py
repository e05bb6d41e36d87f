"""The ASGI app bench/embed_load.py serves: the project's app (plus the embed routes while the project
routing does not include them yet), with the per-address connection limit raised — every bench visitor
connects from 127.0.0.1, and that limit would refuse them by design."""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.conf import settings  # noqa: E402

settings.RATE_LIMIT_EMBED_PER_MINUTE = 1_000_000

from config.routing import websocket_urlpatterns  # noqa: E402

if any("embed" in str(p.pattern) for p in websocket_urlpatterns):
    from config.asgi import application  # noqa: E402,F401
else:
    os.environ.setdefault("EMBEDS_TEST_URLCONF", "1")
    from tests.embeds.asgi_app import application  # noqa: E402,F401
