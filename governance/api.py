"""REST: the approvals queue and decisions; the organization's data retention."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.api_base import OrgAPIView
from agenticos.errors import Invalid
from governance import retention, services
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


# ------------------------------------------------------------------ data retention


class RetentionValueSerializer(serializers.Serializer):
    in_force_days = serializers.IntegerField(help_text="What the sweeps apply; 0 = kept forever.")
    source = serializers.ChoiceField(choices=["organization", "default"])
    organization_days = serializers.IntegerField(allow_null=True, help_text="null = the deployment default.")
    default_days = serializers.IntegerField(help_text="The deployment default (RETENTION_* env); 0 = keep.")
    minimum_days = serializers.IntegerField(help_text="The fewest days the organization may set, besides 0.")


class RetentionSerializer(serializers.Serializer):
    transcript_days = RetentionValueSerializer()
    audit_log_days = RetentionValueSerializer()
    idle_workspace_days = RetentionValueSerializer()
    spend_ledger = serializers.CharField(help_text="Always `never_deleted`: every budget is computed from it.")


def _days_field(minimum: int) -> serializers.IntegerField:
    return serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=retention.MAX_DAYS,
                                    help_text=f"Days; 0 = keep forever, else at least {minimum}; "
                                              "null = back to the deployment default.")


class RetentionPatchSerializer(serializers.Serializer):
    transcript_days = _days_field(retention.KNOB_BY_FIELD["transcript_days"].minimum)
    audit_log_days = _days_field(retention.KNOB_BY_FIELD["audit_log_days"].minimum)
    idle_workspace_days = _days_field(retention.KNOB_BY_FIELD["idle_workspace_days"].minimum)


def retention_document(organization) -> dict:
    out: dict = {"spend_ledger": "never_deleted"}
    for row in retention.effective_values(organization):
        out[row.field] = {"in_force_days": row.days, "source": row.source, "organization_days": row.override,
                          "default_days": row.default, "minimum_days": row.knob.minimum}
    return out


class RetentionView(BaseOrgView):
    # GET: any member (a person may learn how long their conversations are kept); PATCH: owner only.
    serializer_class = RetentionSerializer

    @extend_schema(responses={200: RetentionSerializer, **ERRORS}, summary="The organization's data retention")
    def get(self, request):
        return Response(retention_document(self.actor.organization))

    @extend_schema(request=RetentionPatchSerializer, responses={200: RetentionSerializer, **WRITE_ERRORS},
                   summary="Change the organization's data retention (owner only)")
    def patch(self, request):
        retention.require_retention_owner(self.actor)  # the role decides before the body is read
        if not isinstance(request.data, dict):
            raise Invalid("Send a JSON object of retention values.")
        # The service checks every value (and refuses a name it does not know): one 422 with each field's problem.
        retention.update_retention(actor=self.actor, values=dict(request.data), ip_address=self.actor.extra.get("ip"))
        return Response(retention_document(self.actor.organization))
