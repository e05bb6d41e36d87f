"""/api/v1/ visuals endpoints (included from config.urls)."""

from agenticos.api import route
from capabilities.visuals import api

urlpatterns = [*route("visuals/reports", api.VisualReportView, "api-visual-reports")]
