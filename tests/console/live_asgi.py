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


def _forget_content_types(**_kwargs) -> None:
    """The session's first full flush (tests/fastflush.py) rebuilds the content types with new ids while this
    server lives on: a per-process ContentType cache would then name rows that are gone (an object grant's
    permission lookup fails). A real deployment never renumbers them, so only this test server forgets."""
    from django.contrib.contenttypes.models import ContentType

    ContentType.objects.clear_cache()


from django.core.signals import request_started  # noqa: E402

request_started.connect(_forget_content_types, dispatch_uid="tests.live_asgi.forget_content_types")
