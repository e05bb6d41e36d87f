"""Console routes of an agent's delegates (included in config.urls before the console's)."""

from django.urls import path

from console import delegates

app_name = "console-delegates"

urlpatterns = [
    path("agents/<uuid:agent_id>/delegates/", delegates.delegates, name="list"),
    path("agents/<uuid:agent_id>/delegates/add", delegates.add_delegate, name="add"),
    path("agents/<uuid:agent_id>/delegates/remove", delegates.remove_delegate, name="remove"),
]
