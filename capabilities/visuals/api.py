"""POST /api/v1/visuals/reports: the watching console's report on how a drawing rendered (reports.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos import ratelimit
from agenticos.api import WRITE_ERRORS, BaseOrgView
from agenticos.errors import RateLimited
from agenticos.serializers import ErrorSerializer
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

    @extend_schema(request=ReportSerializer, summary="Report how a drawing rendered (script errors, failed loads, "
                                                     "refused requests)",
                   responses={202: ReportReceiptSerializer, **WRITE_ERRORS,
                              429: OpenApiResponse(ErrorSerializer, description="Too many reports this minute.")})
    def post(self, request: Request) -> Response:
        data = self.valid(ReportSerializer)
        # A console reports each drawing once; the cap keeps one caller from filling Redis with report lists.
        identity = f"{self.actor.organization.pk}:{self.actor.user_id}"
        allowed, retry_after = ratelimit.hit("visual-report", identity, reports.PER_MINUTE)
        if not allowed:
            raise RateLimited(f"Too many drawing reports: the limit is {reports.PER_MINUTE} a minute.",
                              retry_after=retry_after)
        kept = reports.put(self.actor.organization.pk, self.actor.user_id, data["digest"], list(data["errors"]))
        return Response({"digest": data["digest"], "errors": kept}, status=status.HTTP_202_ACCEPTED)
