"""REST: reading the tree of, renaming, pinning and deleting one's own conversation, showing another version of a
message (agents.branches), regenerating an answer, and feedback on an answer (agents.feedback). The list and
its messages are in api_runs; the services, shared with the console and web chat, are in agents.chat."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import WRITE_ERRORS
from agenticos.api_base import OrgAPIView
from agents import branches
from agents import feedback as feedback_service
from agents.api_runs import ConversationSerializer, RunResultSerializer, run_result
from agents.chat import (
    TAG_MAX_LENGTH,
    TAGS_MAX,
    TITLE_MAX,
    change_conversation,
    delete_conversation,
    own_conversation,
    regenerate_answer,
)
from agents.models import Feedback, Message


class ConversationDetailSerializer(ConversationSerializer):
    pinned_at = serializers.DateTimeField(read_only=True, allow_null=True)

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "pinned_at"]


class TreeNodeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    parent_id = serializers.IntegerField(allow_null=True)
    role = serializers.CharField()
    on_branch = serializers.BooleanField()


class ConversationTreeSerializer(ConversationDetailSerializer):
    # Every message's place (its parent), `on_branch` the path on screen; `branch` that path's ids in order.
    # The messages' text is at …/messages.
    branch = serializers.ListField(child=serializers.IntegerField(), read_only=True)
    tree = TreeNodeSerializer(many=True, read_only=True)

    class Meta(ConversationDetailSerializer.Meta):
        fields = [*ConversationDetailSerializer.Meta.fields, "branch", "tree"]


def tree_of(conversation) -> dict:
    nodes = list(Message.objects.filter(conversation=conversation).order_by("id")
                 .values("id", "parent_id", "role", "on_branch"))
    data = dict(ConversationDetailSerializer(conversation).data)
    return {**data, "branch": [n["id"] for n in nodes if n["on_branch"]], "tree": nodes}


class ConversationChangeSerializer(serializers.Serializer):
    # trim_whitespace (DRF's default) trims before the length check; clean_title says the same in the service.
    title = serializers.CharField(required=False, min_length=1, max_length=TITLE_MAX)
    pinned = serializers.BooleanField(required=False)
    archived = serializers.BooleanField(required=False)
    # The whole list (it replaces the one stored); the service trims and lower-cases (agents.chat.clean_tags).
    tags = serializers.ListField(child=serializers.CharField(max_length=TAG_MAX_LENGTH, allow_blank=True),
                                 max_length=TAGS_MAX, required=False)

    def validate(self, attrs: dict) -> dict:
        if not attrs:
            raise serializers.ValidationError("Send a title, pinned, archived, tags or several of them.")
        return attrs


class ConversationDetailView(OrgAPIView):
    permission_map = {"GET": "agents:run", "DELETE": "agents:run", "PATCH": "agents:run"}
    serializer_class = ConversationDetailSerializer

    @extend_schema(responses={200: ConversationTreeSerializer}, summary="One of my conversations, with its tree")
    def get(self, request: Request, conversation_id) -> Response:
        return Response(tree_of(own_conversation(self.actor, conversation_id)))

    @extend_schema(request=ConversationChangeSerializer, responses={200: ConversationDetailSerializer, **WRITE_ERRORS},
                   summary="Rename, pin, archive or tag one of my conversations (only the fields sent change)")
    def patch(self, request: Request, conversation_id) -> Response:
        # Someone else's conversation is a 404 before the body is read: a refusal never says how to phrase it.
        own_conversation(self.actor, conversation_id, draft=False)
        body = ConversationChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        conversation = change_conversation(actor=self.actor, conversation_id=conversation_id,
                                           ip_address=self.client_ip(), **body.validated_data)
        return Response(ConversationDetailSerializer(conversation).data)

    @extend_schema(request=None, responses={204: None, **WRITE_ERRORS},
                   summary="Delete one of my conversations with its messages, runs, workspace and uploaded files")
    def delete(self, request: Request, conversation_id) -> Response:
        delete_conversation(actor=self.actor, conversation_id=conversation_id, ip_address=self.client_ip())
        return Response(status=status.HTTP_204_NO_CONTENT)


class MessageRefSerializer(serializers.Serializer):
    message_id = serializers.IntegerField(min_value=1)


class ConversationBranchView(OrgAPIView):
    permission_map = {"POST": "agents:run"}
    serializer_class = ConversationTreeSerializer

    @extend_schema(request=MessageRefSerializer, responses={200: ConversationTreeSerializer, **WRITE_ERRORS},
                   summary="Show another version of a message (its branch becomes the one on screen)")
    def post(self, request: Request, conversation_id) -> Response:
        own_conversation(self.actor, conversation_id, draft=False)
        body = MessageRefSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        message = branches.show_branch(actor=self.actor, conversation_id=conversation_id,
                                       message_id=body.validated_data["message_id"])
        return Response(tree_of(message.conversation))


class MessageRegenerateView(OrgAPIView):
    permission_map = {"POST": "agents:run"}
    serializer_class = RunResultSerializer

    @extend_schema(request=None, responses={202: RunResultSerializer, **WRITE_ERRORS},
                   summary="Answer again in place (the old answer stays as a version); 202 with the new run")
    def post(self, request: Request, conversation_id, message_id: int) -> Response:
        run, _ = regenerate_answer(actor=self.actor, conversation_id=conversation_id, message_id=message_id,
                                   surface="api")
        return Response(run_result(run), status=status.HTTP_202_ACCEPTED)


class FeedbackSerializer(serializers.ModelSerializer):
    rating = serializers.ChoiceField(choices=Feedback.Rating.choices)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=feedback_service.COMMENT_MAX)

    class Meta:
        model = Feedback
        fields = ["id", "message_id", "run_id", "rating", "comment", "created_at", "updated_at"]
        read_only_fields = ["id", "message_id", "run_id", "created_at", "updated_at"]


class MessageFeedbackView(OrgAPIView):
    permission_map = {"PUT": "agents:run", "DELETE": "agents:run"}
    serializer_class = FeedbackSerializer

    @extend_schema(request=FeedbackSerializer, responses={200: FeedbackSerializer, **WRITE_ERRORS},
                   summary="Rate an answer of my conversation 👍 (up) or 👎 (down), with an optional comment")
    def put(self, request: Request, conversation_id, message_id: int) -> Response:
        own_conversation(self.actor, conversation_id, draft=False)
        body = FeedbackSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        given = feedback_service.give(actor=self.actor, conversation_id=conversation_id, message_id=message_id,
                                      rating=body.validated_data["rating"],
                                      comment=body.validated_data.get("comment", ""))
        return Response(FeedbackSerializer(given).data)

    @extend_schema(request=None, responses={204: None, **WRITE_ERRORS}, summary="Take back my feedback on an answer")
    def delete(self, request: Request, conversation_id, message_id: int) -> Response:
        feedback_service.withdraw(actor=self.actor, conversation_id=conversation_id, message_id=message_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
