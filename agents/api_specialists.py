"""`POST /api/v1/runs/{run_id}/delegations/{task_id}/promote`: a written specialist becomes a draft agent."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from agenticos.api_base import OrgAPIView
from agents.access import member_run
from agents.specialists import promote_specialist


class PromotedSerializer(serializers.Serializer):
    agent_id = serializers.CharField()
    slug = serializers.CharField()
    name = serializers.CharField()


class PromoteSpecialistView(OrgAPIView):
    serializer_class = PromotedSerializer
    permission_map = {"POST": "agents:edit"}

    @extend_schema(request=None, responses={201: PromotedSerializer},
                   summary="Keep a specialist the model wrote in this run as a draft agent")
    def post(self, request, run_id, task_id):
        run = member_run(self.actor, run_id)
        agent = promote_specialist(actor=self.actor, run=run, task_id=task_id)
        return Response({"agent_id": str(agent.pk), "slug": agent.slug, "name": agent.name},
                        status=status.HTTP_201_CREATED)
