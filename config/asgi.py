"""HTTP + WebSocket entry point (daphne)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from agenticos import telemetry  # noqa: E402

telemetry.setup("web")  # before the middleware loads: the request spans are a middleware (off without an endpoint)


class FontsForEveryOrigin:
    """The vendored KaTeX fonts with `Access-Control-Allow-Origin: *`: the website widget draws LaTeX on a customer's
    site, and a browser loads a font from another origin only with that header (a script or a stylesheet needs
    none). Public files of the deployment; nothing else under /static/ gets the header. A CDN in front needs the
    same rule (docs/operations.md)."""

    PREFIX = "/static/vendor/katex/fonts/"

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].startswith(self.PREFIX):
            return await self.inner(scope, receive, send)

        async def with_header(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"access-control-allow-origin", b"*")]}
            await send(message)

        return await self.inner(scope, receive, with_header)


# daphne serves /static/ itself (no separate web server in `make run`; behind a CDN in production).
django_asgi_app = FontsForEveryOrigin(ASGIStaticFilesHandler(get_asgi_application()))

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.http.request import split_domain_port, validate_host  # noqa: E402

# daphne sends the close reason; autobahn builds no debug line per frame while debug is off.
from agenticos import autobahn_lazy_debug, daphne_close_reason  # noqa: E402, F401
from config.routing import websocket_urlpatterns  # noqa: E402

CLOSE_REFUSED = 4003
# The embed socket admits by embed key and checks the Origin against that embed's own allowed origins
# (embeds.services.admit): a partner's page is a foreign origin by design, so it is not held to this check.
_OWN_ORIGIN_RULES = ("/api/v1/embed/",)
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _origin_parts(value: str) -> tuple[str, str, str] | None:
    """(scheme, host, port) of an origin, lowercased, the default port spelled out; None when it is not one."""
    parts = urlsplit(value.strip())
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or "@" in parts.netloc:
        return None
    try:
        port = str(parts.port or _DEFAULT_PORTS[parts.scheme])
    except ValueError:
        return None
    return parts.scheme, parts.hostname.lower(), port


def _trusted(origin: tuple[str, str, str], pattern: str) -> bool:
    """One CSRF_TRUSTED_ORIGINS entry, read as Django's CSRF check reads it (`https://*.example.com` included)."""
    scheme, _, rest = pattern.partition("://")
    wildcard = rest.startswith("*.")
    expected = _origin_parts(f"{scheme}://{rest[2:] if wildcard else rest}")
    if expected is None or expected[0] != origin[0] or expected[2] != origin[2]:
        return False
    return origin[1].endswith("." + expected[1]) if wildcard else origin[1] == expected[1]


def _socket_scheme(scope) -> str:
    """The scheme a page on this host has: https for wss, or behind a TLS proxy that says so (as Django's
    request.is_secure() reads SECURE_PROXY_SSL_HEADER)."""
    if scope.get("scheme") == "wss":
        return "https"
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name, secure_value = proxy_header
        header = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
        for key, value in scope.get("headers") or []:
            if key == header and value.decode("latin-1").split(",")[0].strip() == secure_value:
                return "https"
    return "http"


def _same_host(origin: tuple[str, str, str], host_header: str, scheme: str) -> bool:
    """The page came from the host the socket was opened on, over the same scheme, and that host is one this
    deployment serves (Django's CSRF check reads an Origin the same way)."""
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # what Django's own request.get_host() allows
    domain, port = split_domain_port(host_header)
    if not domain or not validate_host(domain, allowed):
        return False
    return (scheme, domain, port or _DEFAULT_PORTS[scheme]) == origin


def origin_allowed(origin: str, host_header: str | None, scheme: str = "http") -> bool:
    """Whether a page at `origin` may open a cookie-authenticated socket: this deployment's own origin
    (FRONTEND_URL, or the host the socket was opened on when ALLOWED_HOSTS lists it) or CSRF_TRUSTED_ORIGINS."""
    parts = _origin_parts(origin)
    if parts is None:  # "null" (a sandboxed frame, a file:// page) and anything malformed
        return False
    if _origin_parts(settings.FRONTEND_URL) == parts:
        return True
    if any(_trusted(parts, pattern) for pattern in settings.CSRF_TRUSTED_ORIGINS):
        return True
    return bool(host_header) and _same_host(parts, host_header or "", scheme)


class SameOriginSockets:
    """Refuses (close 4003, before any consumer runs) a socket a page on another origin opens with the
    member's session cookie: cross-site WebSocket hijacking. Browsers always send Origin on a WebSocket
    handshake and a page cannot forge it, so a handshake without one is a non-browser client — it holds
    the cookie itself, which is no cross-site risk — and is let through to the consumer's own checks."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not scope["path"].startswith(_OWN_ORIGIN_RULES):
            headers = dict(scope.get("headers") or [])
            origin = headers.get(b"origin")
            host = headers.get(b"host")
            if origin is not None and not origin_allowed(
                origin.decode("latin-1"), host.decode("latin-1") if host is not None else None, _socket_scheme(scope)
            ):
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": CLOSE_REFUSED})
                return None
        return await self.inner(scope, receive, send)


class A2AInFront:
    """`/a2a/…` (interop/a2a.py) is the A2A SDK's Starlette app: `message/stream` streams, which Django's view
    layer would buffer. Everything else goes to Django."""

    def __init__(self, inner):
        from interop import a2a

        self.inner, self.a2a = inner, a2a
        self.a2a_app = telemetry.traced_asgi(a2a.application)  # Django's request spans do not see it

    async def __call__(self, scope, receive, send):
        if self.a2a.handles(scope):
            return await self.a2a_app(scope, receive, send)
        return await self.inner(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": A2AInFront(django_asgi_app),
        "websocket": SameOriginSockets(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

from agenticos import gc_tuning  # noqa: E402

# Everything daphne serves is imported now: the collector no longer re-examines it (agenticos/gc_tuning.py).
gc_tuning.tune()
