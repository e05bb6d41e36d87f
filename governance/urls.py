"""/api/v1/ approvals and the organization's data retention."""

from agenticos.api import route
from governance import api

urlpatterns = [
    *route("approvals", api.ApprovalListView, "approvals"),
    *route("approvals/<uuid:approval_id>", api.ApprovalDecideView, "approval-decide"),
    *route("organization/retention", api.RetentionView, "organization-retention"),
]
