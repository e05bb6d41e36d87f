"""/api/v1/ agent endpoints."""

from agenticos.api import route
from agents import api, api_attachments, api_capability_card, api_rollouts, api_transcriptions

urlpatterns = [
    *route("model-profiles", api.ModelProfileListView, "api-model-profiles"),
    *route("model-profiles/<uuid:pk>", api.ModelProfileDetailView, "api-model-profile"),
    *route("attachments", api_attachments.AttachmentUploadView, "api-attachments"),
    *route("transcriptions", api_transcriptions.TranscriptionView, "api-transcriptions"),
    *route("agents", api.AgentListView, "api-agents"),
    *route("agents/import", api.AgentImportView, "api-agents-import"),
    *route("agents/<uuid:pk>", api.AgentDetailView, "api-agent"),
    *route("agents/<uuid:pk>/publish", api.AgentPublishView, "api-agent-publish"),
    *route("agents/<uuid:pk>/versions", api.AgentVersionListView, "api-agent-versions"),
    *route("agents/<uuid:pk>/versions/<str:number>", api.AgentVersionDetailView, "api-agent-version"),
    *route("agents/<uuid:pk>/diff", api.AgentDiffView, "api-agent-diff"),
    *route("agents/<uuid:pk>/environments", api.AgentEnvironmentListView, "api-agent-environments"),
    *route("agents/<uuid:pk>/environments/<str:name>/promote", api.AgentPromoteView, "api-agent-promote"),
    *route("agents/<uuid:pk>/environments/<str:name>/rollouts", api_rollouts.RolloutStartView, "api-agent-rollouts"),
    *route("agents/<uuid:pk>/environments/<str:name>/rollouts/<uuid:rollout_id>", api_rollouts.RolloutDetailView,
           "api-agent-rollout"),
    *route("agents/<uuid:pk>/environments/<str:name>/rollouts/<uuid:rollout_id>/pause", api_rollouts.RolloutPauseView,
           "api-agent-rollout-pause"),
    *route("agents/<uuid:pk>/environments/<str:name>/rollouts/<uuid:rollout_id>/advance",
           api_rollouts.RolloutAdvanceView, "api-agent-rollout-advance"),
    *route("agents/<uuid:pk>/environments/<str:name>/rollouts/<uuid:rollout_id>/promote",
           api_rollouts.RolloutPromoteView, "api-agent-rollout-promote"),
    *route("agents/<uuid:pk>/environments/<str:name>/rollouts/<uuid:rollout_id>/abort", api_rollouts.RolloutAbortView,
           "api-agent-rollout-abort"),
    *route("agents/<uuid:pk>/export", api.AgentExportView, "api-agent-export"),
    *route("agents/<uuid:pk>/avatar", api.AgentAvatarView, "api-agent-avatar"),
    *route("agents/<uuid:pk>/grants", api.AgentGrantListView, "api-agent-grants"),
    *route("agents/<uuid:pk>/grants/<str:user_id>", api.AgentGrantDetailView, "api-agent-grant"),
    *route("agents/<uuid:pk>/capabilities/<str:capability_id>/enable", api_capability_card.CapabilityEnableView,
           "api-agent-capability-enable"),
    *route("agents/<uuid:pk>/capabilities/<str:capability_id>/request", api_capability_card.CapabilityRequestView,
           "api-agent-capability-request"),
]
