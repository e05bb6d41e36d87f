"""Console routes of Builder → Evaluations → Replays (included in config.urls before the console's own)."""

from django.urls import path

from console import replays

app_name = "console-replays"

urlpatterns = [
    path("agents/<uuid:agent_id>/replays/", replays.replay_list, name="list"),
    path("agents/<uuid:agent_id>/replays/gate", replays.gate, name="gate"),
    path("agents/<uuid:agent_id>/replays/runs/<uuid:run_id>/tags", replays.tag_run, name="tag-run"),
    path("agents/<uuid:agent_id>/replays/<uuid:replay_id>/", replays.replay_detail, name="detail"),
    path("agents/<uuid:agent_id>/replays/<uuid:replay_id>/cancel", replays.replay_cancel, name="cancel"),
]
