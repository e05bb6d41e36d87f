"""REST: the approvals queue and decisions."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from agenticos.api_base import OrgAPIView
from governance import services
from governance.models import Approval


class ApprovalSerializer(serializers.ModelSerializer):
    run_id = serializers.UUIDField()
    agent_id = serializers.UUIDField(source="run.agent_id")
    decided_by = serializers.EmailField(source="decided_by.email", allow_null=True, default=None)

    class Meta:
        model = Approval
        fields = [
            "id", "run_id", "agent_id", "tool_call_id", "tool_id", "tool_name", "capability_id", "args", "status",
            "decided_by", "note", "created_at", "decided_at",
        ]


class DecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    note = serializers.CharField(required=False, allow_blank=True, max_length=1000, default="")


class ApprovalListView(OrgAPIView):
    serializer_class = ApprovalSerializer
    permission_map = {"GET": "approvals:decide"}

    @extend_schema(parameters=[OpenApiParameter("status", str)], responses={200: ApprovalSerializer(many=True)},
                   summary="List approvals")
    def get(self, request):
        qs = self.org_queryset(Approval).select_related("run", "decided_by")
        if request.query_params.get("status"):
            qs = qs.filter(status=request.query_params["status"])
        page = self.paginate_queryset(qs.order_by("-created_at"))
        return self.get_paginated_response(ApprovalSerializer(page, many=True).data)


class ApprovalDecideView(OrgAPIView):
    serializer_class = DecisionSerializer
    permission_map = {"GET": "approvals:decide", "POST": "approvals:decide"}

    @extend_schema(responses={200: ApprovalSerializer}, summary="One approval")
    def get(self, request, approval_id):
        approval = self.org_get(Approval, approval_id, self.org_queryset(Approval).select_related("run", "decided_by"))
        return Response(ApprovalSerializer(approval).data)

    @extend_schema(request=DecisionSerializer, responses=ApprovalSerializer, summary="Approve or reject a parked call")
    def post(self, request, approval_id):
        approval = self.org_get(Approval, approval_id)  # an approval of another organization: 404 before the body
        data = DecisionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        approval = services.decide_approval(
            actor=self.actor, approval=approval, decision=data.validated_data["decision"],
            note=data.validated_data.get("note", ""),
        )
        return Response(ApprovalSerializer(Approval.objects.select_related("run", "decided_by").get(pk=approval.pk)).data)
