"""The project's URLs plus a console page and an API route that raise, and a middleware that raises around the
/api/ edge: the server errors the production-defaults tests provoke (tests/ops/test_production_defaults.py).

`ROOT_URLCONF` here in process (override_settings) and, for a real daphne, through tests.ops.failing_settings."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.urls import path

from config.urls import handler404, handler500  # noqa: F401  (Django reads them from the ROOT_URLCONF module)
from config.urls import urlpatterns as project_urlpatterns

# What a traceback would carry: the exception's message (a value a view had in hand).
LEAKED_VALUE = "sk-leak-me-0123456789abcdef"
RAISES_AROUND_THE_EDGE = "/api/v1/raises-around-the-edge"


def raising_view(request: HttpRequest) -> HttpResponse:
    raise RuntimeError(f"the view failed holding {LEAKED_VALUE}")


class RaisingMiddleware:
    """Raises for one /api/ path before agenticos.middleware.ApiEdgeMiddleware sees the request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == RAISES_AROUND_THE_EDGE:
            raise RuntimeError(f"a middleware failed holding {LEAKED_VALUE}")
        return self.get_response(request)


urlpatterns = [
    path("raises/", raising_view),
    path("api/v1/raises", raising_view),
    *project_urlpatterns,
]
