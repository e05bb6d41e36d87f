"""The browser tests' ASGI app (tests.console.live_asgi) with Connections → Remote agents routed, until
agenticos.urls includes them (then tests.console.urls_remote_agents is the console's urlconf as it is)."""

from django.conf import settings

from tests.console.live_asgi import application

settings.ROOT_URLCONF = "tests.console.urls_remote_agents"

__all__ = ["application"]
