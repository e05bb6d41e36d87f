"""POST /api/v1/visuals/reports: the watching console's report on how a drawing rendered (reports.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS, BaseOrgView
from capabilities.visuals import reports


class ReportSerializer(serializers.Serializer):
    digest = serializers.RegexField(r"^[0-9a-f]{64}$",
                                    help_text="sha256 of the drawing's kind, a newline, and its content.")
    errors = serializers.ListField(child=serializers.CharField(max_length=2000, allow_blank=True),
                                   max_length=100, default=list,
                                   help_text="Script errors, failed loads and refused requests; empty when it "
                                             "rendered cleanly.")


class ReportReceiptSerializer(serializers.Serializer):
    digest = serializers.CharField(help_text="The drawing the report was filed for.")
    errors = serializers.IntegerField(help_text="How many errors were kept (at most 20, each cut at 500 "
                                                "characters).")


class VisualReportView(BaseOrgView):
    serializer_class = ReportSerializer
    permission_map = {"POST": "agents:run"}

    @extend_schema(request=ReportSerializer, responses={202: ReportReceiptSerializer, **WRITE_ERRORS},
                   summary="Report how a drawing rendered (script errors, failed loads, refused requests)")
    def post(self, request: Request) -> Response:
        data = self.valid(ReportSerializer)
        kept = reports.put(self.actor.organization.pk, self.actor.user_id, data["digest"], list(data["errors"]))
        return Response({"digest": data["digest"], "errors": kept}, status=status.HTTP_202_ACCEPTED)
