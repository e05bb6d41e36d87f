"""The console's routes (tests.console.urls) plus Connections → Remote agents, until agenticos.urls includes them."""

from django.urls import include, path

from tests.console.urls import urlpatterns as console_patterns

_included = any(getattr(p, "namespace", None) == "console-remote-agents" for p in console_patterns)
urlpatterns = ([] if _included else [path("", include("agenticos.console.urls_remote_agents"))]) + [*console_patterns]
