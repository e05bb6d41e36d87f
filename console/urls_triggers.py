"""Console routes of Builder → Triggers (included in config.urls before the console's own)."""

from django.urls import path

from console import triggers

app_name = "console-triggers"

urlpatterns = [
    path("agents/<uuid:agent_id>/triggers/", triggers.trigger_list, name="list"),
    path("agents/<uuid:agent_id>/triggers/describe", triggers.describe_cron, name="describe"),
    path("agents/<uuid:agent_id>/triggers/<uuid:trigger_id>/", triggers.trigger_edit, name="edit"),
    path("agents/<uuid:agent_id>/triggers/<uuid:trigger_id>/<str:action>", triggers.trigger_action, name="action"),
]
