from django.urls import path

from governance import api

urlpatterns = [
    path("approvals", api.ApprovalListView.as_view(), name="approvals"),
    path("approvals/<uuid:approval_id>", api.ApprovalDecideView.as_view(), name="approval-decide"),
]
