"""/api/v1/ evaluation endpoints."""

from agenticos.api import route
from evals import api, api_replays

urlpatterns = [
    *route("agents/<str:agent_id>/evals", api.AgentSuitesView, "api-agent-evals"),
    *route("agents/<str:agent_id>/evals/import", api.SuiteImportView, "api-agent-evals-import"),
    *route("agents/<str:agent_id>/evals/runs", api.AgentSuiteRunsView, "api-agent-eval-runs"),
    *route("agents/<str:agent_id>/evals/<str:suite_id>", api.SuiteDetailView, "api-agent-eval"),
    *route("agents/<str:agent_id>/evals/<str:suite_id>/yaml", api.SuiteExportView, "api-agent-eval-yaml"),
    *route("evals/runs/<str:run_id>", api.SuiteRunDetailView, "api-eval-run"),
    *route("evals/runs/<str:run_id>/compare", api.SuiteRunCompareView, "api-eval-run-compare"),
    *route("agents/<str:agent_id>/replays", api_replays.AgentReplaysView, "api-agent-replays"),
    *route("agents/<str:agent_id>/replay-gate", api_replays.ReplayGateView, "api-agent-replay-gate"),
    *route("agents/<str:agent_id>/run-tags", api_replays.AgentRunTagsView, "api-agent-run-tags"),
    *route("agents/<str:agent_id>/runs/<str:run_id>/tags", api_replays.RunTagsView, "api-agent-run-tags-detail"),
    *route("replays/<str:replay_id>", api_replays.ReplaySetDetailView, "api-replay"),
    *route("replays/<str:replay_id>/cancel", api_replays.ReplayCancelView, "api-replay-cancel"),
    *route("replays/<str:replay_id>/results/<str:result_id>/case", api_replays.ReplayMakeCaseView,
           "api-replay-make-case"),
]
