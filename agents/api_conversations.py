"""REST: renaming, pinning and deleting one's own conversation (the list and its messages are in api_runs; the
services, shared with the console's forms, are in agents.chat)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS
from agenticos.api_base import OrgAPIView
from agents.api_runs import ConversationSerializer
from agents.chat import (
    TITLE_MAX,
    delete_conversation,
    own_conversation,
    pin_conversation,
    rename_conversation,
)


class ConversationDetailSerializer(ConversationSerializer):
    pinned_at = serializers.DateTimeField(read_only=True, allow_null=True)

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "pinned_at"]


class ConversationChangeSerializer(serializers.Serializer):
    # trim_whitespace (DRF's default) trims before the length check; clean_title says the same in the service.
    title = serializers.CharField(required=False, min_length=1, max_length=TITLE_MAX)
    pinned = serializers.BooleanField(required=False)

    def validate(self, attrs: dict) -> dict:
        if not attrs:
            raise serializers.ValidationError("Send a title, pinned or both.")
        return attrs


class ConversationDetailView(OrgAPIView):
    permission_map = {"DELETE": "agents:run", "PATCH": "agents:run"}
    serializer_class = ConversationDetailSerializer

    @extend_schema(request=ConversationChangeSerializer, responses={200: ConversationDetailSerializer, **WRITE_ERRORS},
                   summary="Rename or pin (pinned: true/false) one of my conversations")
    def patch(self, request: Request, conversation_id) -> Response:
        # Someone else's conversation is a 404 before the body is read: a refusal never says how to phrase it.
        own_conversation(self.actor, conversation_id, draft=False)
        body = ConversationChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        conversation = None
        if "title" in body.validated_data:
            conversation = rename_conversation(actor=self.actor, conversation_id=conversation_id,
                                               title=body.validated_data["title"], ip_address=self.client_ip())
        if "pinned" in body.validated_data:
            conversation = pin_conversation(actor=self.actor, conversation_id=conversation_id,
                                            pinned=body.validated_data["pinned"])
        return Response(ConversationDetailSerializer(conversation).data)

    @extend_schema(request=None, responses={204: None, **WRITE_ERRORS},
                   summary="Delete one of my conversations with its messages, runs, workspace and uploaded files")
    def delete(self, request: Request, conversation_id) -> Response:
        delete_conversation(actor=self.actor, conversation_id=conversation_id, ip_address=self.client_ip())
        return Response(status=status.HTTP_204_NO_CONTENT)
