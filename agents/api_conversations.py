"""REST: renaming, pinning and deleting one's own conversation (the list and its messages are in api_runs).

The rename and pin services live here, beside their endpoint, and the console's forms call them too."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos import audit
from agenticos.api import WRITE_ERRORS
from agenticos.api_base import OrgAPIView
from agenticos.errors import Invalid
from agenticos.tenancy import Actor
from agents.api_runs import ConversationSerializer
from agents.chat import delete_conversation, own_conversation
from agents.models import Conversation

TITLE_MAX = Conversation._meta.get_field("title").max_length or 200


def clean_title(title: object) -> str:
    """A title of 1–200 characters once trimmed (one rule for the API and the console's form)."""
    text = title.strip() if isinstance(title, str) else ""
    if not text or len(text) > TITLE_MAX:
        raise Invalid(f"A title has 1 to {TITLE_MAX} characters.",
                      details={"problems": [{"field": "title", "message": f"1 to {TITLE_MAX} characters."}]})
    return text


def _locked_own(actor: Actor, conversation_id) -> Conversation:
    conversation = own_conversation(actor, conversation_id, draft=False)
    return Conversation.objects.select_for_update().get(pk=conversation.pk)


def rename_conversation(*, actor: Actor, conversation_id, title: object, ip_address: str | None = None) -> Conversation:
    """The owner renames their conversation; anyone else (same organization or not) gets 404."""
    actor.require("agents:run")
    with transaction.atomic():
        conversation = _locked_own(actor, conversation_id)
        new_title = clean_title(title)
        if new_title != conversation.title:
            audit.record(actor=actor.user, organization=actor.organization, action="conversation.renamed",
                         target=conversation, details={"from": conversation.title, "to": new_title},
                         ip_address=ip_address)
            conversation.title = new_title
            conversation.save(update_fields=["title"])
    return conversation


def pin_conversation(*, actor: Actor, conversation_id, pinned: bool) -> Conversation:
    """The owner pins their conversation to the top of their list (or unpins it). A list preference: no audit."""
    actor.require("agents:run")
    with transaction.atomic():
        conversation = _locked_own(actor, conversation_id)
        if pinned != (conversation.pinned_at is not None):
            conversation.pinned_at = timezone.now() if pinned else None
            conversation.save(update_fields=["pinned_at"])
    return conversation


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
