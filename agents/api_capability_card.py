"""REST: the missing-capability card's two actions — enable it (editors) or ask the owner (anyone else)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS
from agents import capability_card
from agents.api import AgentView
from governance import grants


class CardRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")


class EnabledSerializer(serializers.Serializer):
    capability = serializers.CharField()
    enabled = serializers.BooleanField()
    published_version = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()
    toolbox_url = serializers.CharField()


class AskedSerializer(serializers.Serializer):
    capability = serializers.CharField()
    asked = serializers.BooleanField()
    message = serializers.CharField()


class CapabilityEnableView(AgentView):
    serializer_class = EnabledSerializer

    @extend_schema(request=None, responses={200: EnabledSerializer, **WRITE_ERRORS},
                   summary="Enable a capability on the draft from the missing-capability card (published at once "
                           "only if the draft had nothing unpublished and you may publish)")
    def post(self, request: Request, pk, capability_id: str) -> Response:
        agent = self.agent(pk, level=grants.EDIT)
        return Response(capability_card.enable_from_card(actor=self.actor, agent=agent, capability_id=capability_id))


class CapabilityRequestView(AgentView):
    serializer_class = AskedSerializer

    @extend_schema(request=CardRequestSerializer, responses={200: AskedSerializer, **WRITE_ERRORS},
                   summary="Ask the agent's owner to enable a capability (they get a notification)")
    def post(self, request: Request, pk, capability_id: str) -> Response:
        agent = self.agent(pk, level=grants.USE)
        data = self.valid(CardRequestSerializer)
        return Response(capability_card.ask_owner(actor=self.actor, agent=agent, capability_id=capability_id,
                                                  reason=data.get("reason", "")))
