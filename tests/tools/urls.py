from django.urls import include, path

from agenticos.api import route
from agents import api_tool_builder

# The tools API, and the AI tool builder's turn, which starts a run and so lives beside the runner's services
# (agents.api_tool_builder) rather than in the catalog.
urlpatterns = [
    path("api/v1/", include("capabilities.urls_tools")),
    path("api/v1/", include(route("tool-kits/sessions/<uuid:pk>/messages", api_tool_builder.SessionMessageView,
                                  "api-tool-session-messages"))),
]
