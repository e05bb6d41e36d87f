"""/api/v1/ trigger endpoints (management) and the public event webhook."""

from agenticos.api import route
from triggers import api, webhooks

urlpatterns = [
    *route("agents/<str:agent_id>/triggers", api.AgentTriggersView, "api-agent-triggers"),
    *route("triggers/<str:trigger_id>", api.TriggerDetailView, "api-trigger"),
    *route("triggers/<str:trigger_id>/pause", api.TriggerPauseView, "api-trigger-pause"),
    *route("triggers/<str:trigger_id>/resume", api.TriggerResumeView, "api-trigger-resume"),
    *route("triggers/<str:trigger_id>/rotate-secret", api.TriggerRotateSecretView, "api-trigger-rotate-secret"),
    *route("triggers/<str:trigger_id>/fire", api.TriggerFireView, "api-trigger-fire"),
    *route("triggers/<str:trigger_id>/runs", api.TriggerRunsView, "api-trigger-runs"),
    # Public: the signature is the credential.
    *route("hooks/<str:key>", webhooks.event_hook, "trigger-hook"),
]
