"""The console's routes (tests.console.urls) plus Connections → Remote agents and an agent's delegates, until
agenticos.urls includes them."""

from django.urls import include, path

from tests.console.urls import urlpatterns as console_patterns

_namespaces = {getattr(p, "namespace", None) for p in console_patterns}
urlpatterns = [
    *([] if "console-remote-agents" in _namespaces else [path("", include("agenticos.console.urls_remote_agents"))]),
    *([] if "console-delegates" in _namespaces else [path("", include("agenticos.console.urls_delegates"))]),
    *console_patterns,
]
