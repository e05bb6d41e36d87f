"""/api/v1/ approvals."""

from agenticos.api import route
from governance import api

urlpatterns = [
    *route("approvals", api.ApprovalListView, "approvals"),
    *route("approvals/<uuid:approval_id>", api.ApprovalDecideView, "approval-decide"),
]
