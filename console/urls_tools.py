"""Console routes of Tools → custom tools, the template gallery and the AI tool builder."""

from django.urls import path

from console import tools

app_name = "console-tools"

urlpatterns = [
    path("tools/", tools.tool_list, name="list"),
    path("tools/new", tools.tool_new, name="new"),
    path("tools/<uuid:pk>/", tools.tool_edit, name="edit"),
    path("tools/<uuid:pk>/test", tools.tool_test, name="test"),
    path("tools/<uuid:pk>/delete", tools.tool_delete, name="delete"),
    path("tools/templates/<slug:key>/install", tools.template_install, name="template-install"),
    path("tools/ai/", tools.ai_sessions, name="ai"),
    path("tools/ai/<uuid:pk>/", tools.ai_session, name="ai-session"),
    path("tools/ai/<uuid:pk>/say", tools.ai_say, name="ai-say"),
    path("tools/ai/<uuid:pk>/restart", tools.ai_restart, name="ai-restart"),
    path("tools/ai/<uuid:pk>/kits", tools.ai_kit, name="ai-kit"),
    path("tools/ai/kits/<uuid:pk>/finalize", tools.ai_finalize, name="ai-finalize"),
    path("tools/ai/drafts/<uuid:pk>/test", tools.ai_draft_test, name="ai-draft-test"),
]
