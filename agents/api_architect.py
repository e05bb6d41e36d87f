"""REST: accept an agent card the Architect proposed (propose_setup) — a draft agent, never published."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS
from agenticos.api_base import OrgAPIView
from agents import architect


class AcceptSerializer(serializers.Serializer):
    card = serializers.IntegerField(min_value=0, max_value=2, default=0)
    # The person's edits of the card before accepting; the rest is edited in the Builder, on the draft.
    name = serializers.CharField(required=False, max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    instructions = serializers.CharField(required=False, max_length=20_000)
    monthly_budget_usd = serializers.DecimalField(required=False, allow_null=True, max_digits=12, decimal_places=4,
                                                  min_value=0)


class AcceptedSerializer(serializers.Serializer):
    agent_id = serializers.UUIDField()
    name = serializers.CharField()
    builder_url = serializers.CharField()
    trigger_id = serializers.UUIDField(allow_null=True, help_text="The schedule the setup carried, created on the "
                                       "draft; it starts once the agent is published.")
    trigger_refused = serializers.CharField(allow_blank=True, help_text="Why the draft was created without its "
                                            "schedule (empty when it has none or it was created).")


class ProposalAcceptView(OrgAPIView):
    serializer_class = AcceptSerializer
    permission_map = {"POST": "agents:edit"}

    @extend_schema(request=AcceptSerializer, responses={201: AcceptedSerializer, **WRITE_ERRORS},
                   summary="Accept an agent the Architect proposed in one of your runs: a draft you open in the "
                           "Builder (never published)")
    def post(self, request: Request, run_id, call_id: str) -> Response:
        data = AcceptSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        card = fields.pop("card")
        edits = {k: (str(v) if k == "monthly_budget_usd" and v is not None else v) for k, v in fields.items()}
        accepted = architect.accept_setup(self.actor, run_id=run_id, call_id=call_id, card=card, edits=edits)
        agent = accepted.agent
        body = {"agent_id": agent.pk, "name": agent.name, "builder_url": reverse("console:builder", args=[agent.pk]),
                "trigger_id": accepted.trigger_id, "trigger_refused": accepted.trigger_refused}
        return Response(AcceptedSerializer(body).data, status=status.HTTP_201_CREATED)
