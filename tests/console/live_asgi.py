"""The ASGI app the browser tests' daphne subprocess serves: the project's app on the test database, with the
console routes and static files (a real `daphne` process, so HTTP and WebSocket run as in production)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.conf import settings  # noqa: E402

# The database the test session really created (pytest-django suffixes it per xdist worker).
settings.DATABASES["default"]["NAME"] = os.environ.get("CONSOLE_LIVE_DATABASE") or settings.DATABASES["default"]["TEST"]["NAME"]
settings.ROOT_URLCONF = "tests.console.urls"

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from config.asgi import FontsForEveryOrigin  # noqa: E402
from config.asgi import application as project_application  # noqa: E402

application = FontsForEveryOrigin(ASGIStaticFilesHandler(project_application))
