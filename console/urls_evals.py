"""Console routes of Builder → Evaluations (included in config.urls before the console's own)."""

from django.urls import path

from console import evals

app_name = "console-evals"

urlpatterns = [
    path("agents/<uuid:agent_id>/evals/", evals.suite_list, name="list"),
    path("agents/<uuid:agent_id>/evals/compare", evals.compare, name="compare"),
    path("agents/<uuid:agent_id>/evals/runs/<uuid:run_id>/", evals.run_detail, name="run"),
    path("agents/<uuid:agent_id>/evals/<uuid:suite_id>/<str:action>", evals.suite_action, name="action"),
]
