"""REST: run an agent, the run ledger, stop/resume/answer, conversations and their messages."""

from __future__ import annotations

import uuid

from asgiref.sync import async_to_sync
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from agenticos.api_base import OrgAPIView
from agenticos.errors import Invalid
from agents.chat import member_run, own_conversation, start_member_run
from agents.models import Agent, Conversation, Message, Run, RunStatus, ToolCall
from agents.run_handle import group_name
from agents.runner.frames import FINAL_FRAME_TYPES, frames_in
from agents.runs import request_stop
from governance import services as governance
from governance.grants import USE, require_agent_access
from governance.models import Question

WAIT_TIMEOUT_SECONDS = 300
PARKED = (RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER)


NEW_CONVERSATION = "new"


class RunRequestSerializer(serializers.Serializer):
    prompt = serializers.CharField(allow_blank=True, trim_whitespace=False)
    conversation = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=64,
        trim_whitespace=False,
        help_text='"new" opens a conversation with this turn; the response\'s conversation_id continues it: '
        "send it here on later calls and the model reads the turns before. A conversation that is not yours "
        "(or of another agent) is 404. Without it the run has no conversation and records no turn.",
    )
    conversation_id = serializers.UUIDField(
        required=False, allow_null=True, help_text="The same as conversation with an id (kept for older callers)."
    )
    environment = serializers.SlugField(required=False, default="production")
    attachment_ids = serializers.ListField(
        child=serializers.CharField(max_length=2000), required=False, max_length=10,
        help_text="Ids POST /api/v1/attachments answered: files for this turn (needs a conversation).")

    def validate_conversation(self, value: str | None) -> str | uuid.UUID | None:
        if value is None or value == NEW_CONVERSATION:
            return value
        try:
            return uuid.UUID(value)
        except ValueError:
            raise serializers.ValidationError('Send "new" or the conversation_id of an earlier call.') from None

    def validate(self, attrs: dict) -> dict:
        named, by_id = attrs.get("conversation"), attrs.get("conversation_id")
        if named is not None and by_id is not None and named != by_id:
            raise serializers.ValidationError({"conversation": "Send conversation or conversation_id, not both."})
        if named is None and by_id is not None:
            attrs["conversation"] = by_id
        return attrs


class ToolCallSerializer(serializers.ModelSerializer):
    class Meta:
        model = ToolCall
        fields = ["tool_call_id", "tool_name", "capability_id", "args", "result", "status", "started_at", "finished_at"]


class RunSerializer(serializers.ModelSerializer):
    run_id = serializers.UUIDField(source="id")
    agent_id = serializers.UUIDField()
    version = serializers.IntegerField(source="version.number")
    conversation_id = serializers.UUIDField(allow_null=True)
    voice_call = serializers.BooleanField(
        source="is_voice_call", read_only=True,
        help_text="A live voice call's run: its turns are the call's transcripts, its tool calls those the call ran, "
                  "its tokens and cost the realtime model's; it ends with the call (stopping it hangs up).")

    class Meta:
        model = Run
        fields = [
            "run_id", "agent_id", "version", "conversation_id", "surface", "voice_call", "status", "prompt", "output",
            "error", "input_tokens", "output_tokens", "requests", "cost_usd", "cost_is_partial", "context_tokens",
            "context_window", "created_at", "started_at", "finished_at",
        ]


    def to_representation(self, instance: Run) -> dict:
        data = super().to_representation(instance)
        data["error"] = instance.public_error  # never the operator's hint, whoever asks through the API
        return data


class RunDetailSerializer(RunSerializer):
    tool_calls = ToolCallSerializer(many=True)

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "tool_calls"]


class RunErrorSerializer(serializers.Serializer):
    type = serializers.CharField(help_text="BudgetExceeded, Cancelled, the provider's error kind, …")
    message = serializers.CharField()


class RunResultSerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    status = serializers.CharField()
    output = serializers.CharField(allow_blank=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=14, decimal_places=8)
    cost_is_partial = serializers.BooleanField()
    conversation_id = serializers.UUIDField(
        allow_null=True, help_text='The conversation this turn belongs to (send it as "conversation" to continue).'
    )
    error = RunErrorSerializer(allow_null=True, help_text="Why the run ended without an answer; null otherwise.")


def run_result(run: Run) -> dict:
    return {
        "run_id": str(run.pk),
        "status": run.status,
        "output": run.output if run.status not in PARKED else "",
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost_usd": f"{run.cost_usd:f}",
        "cost_is_partial": run.cost_is_partial,
        "conversation_id": str(run.conversation_id) if run.conversation_id else None,
        "error": run.public_error or None,
    }


def _wait_for_end(run_id: uuid.UUID, start) -> None:
    """Join the run's group before it can start, then wait for its last frame.

    A layer of its own: this sync view runs its async part on a fresh event loop each time, and the
    process-wide layer's receive lock belongs to whichever loop first received on it."""
    layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)

    async def _wait():
        channel = await layer.new_channel()
        await layer.group_add(group_name(run_id), channel)
        try:
            await _start()
            import asyncio

            deadline = asyncio.get_running_loop().time() + WAIT_TIMEOUT_SECONDS
            while True:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    return
                try:
                    message = await asyncio.wait_for(layer.receive(channel), timeout=remaining)
                except TimeoutError:
                    return
                if any(item.get("type") in FINAL_FRAME_TYPES for item in frames_in(message)):
                    return
        finally:
            await layer.group_discard(group_name(run_id), channel)
            await layer.close_pools()

    from asgiref.sync import sync_to_async

    _start = sync_to_async(start)
    async_to_sync(_wait)()


class AgentRunView(OrgAPIView):
    permission_map = {"POST": "agents:run"}
    serializer_class = RunRequestSerializer

    @extend_schema(
        request=RunRequestSerializer,
        responses={200: RunResultSerializer, 202: RunResultSerializer},
        parameters=[OpenApiParameter("wait", bool, description="false → 202 at once with the run id")],
        summary="Run an agent",
    )
    def post(self, request, agent_id):
        # Who may not run the agent is refused (404/403) before the prompt is read; start_member_run checks again.
        require_agent_access(self.actor, self.org_get(Agent, agent_id), USE)
        data = RunRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        wait = request.query_params.get("wait", "true").lower() not in ("false", "0", "no")
        run_id = uuid.uuid4()
        started: dict = {}

        conversation = data.validated_data.get("conversation")
        new_conversation = conversation == NEW_CONVERSATION

        def start():
            started["run"], _ = start_member_run(
                actor=self.actor,
                agent_id=agent_id,
                text=data.validated_data["prompt"],
                surface="api",
                conversation_id=None if new_conversation else conversation,
                create_conversation=new_conversation,
                environment=data.validated_data.get("environment") or "production",
                run_id=run_id,
                attachment_ids=data.validated_data.get("attachment_ids"),
            )

        if not wait:
            start()
            return Response(run_result(started["run"]), status=status.HTTP_202_ACCEPTED)
        _wait_for_end(run_id, start)
        run = Run.objects.get(pk=run_id)
        return Response(run_result(run), status=status.HTTP_200_OK if run.is_terminal or run.status in PARKED else 202)


class RunListView(OrgAPIView):
    serializer_class = RunSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(
        parameters=[
            OpenApiParameter("agent", str), OpenApiParameter("surface", str), OpenApiParameter("status", str),
            OpenApiParameter("since", str, description="ISO date-time"), OpenApiParameter("until", str),
        ],
        responses={200: RunSerializer(many=True)},
        summary="List runs",
    )
    def get(self, request):
        qs = Run.objects.filter(organization=self.actor.organization).select_related("version")
        if not self.actor.has("runs:view"):
            qs = qs.filter(user_id=self.actor.user_id)
        params = request.query_params
        if params.get("agent"):
            qs = qs.filter(agent_id=_uuid(params["agent"], "agent"))
        for name in ("surface", "status"):
            if params.get(name):
                qs = qs.filter(**{name: params[name]})
        for name, lookup in (("since", "created_at__gte"), ("until", "created_at__lt")):
            if params.get(name):
                when = parse_datetime(params[name])
                if when is None:
                    raise Invalid(f"{name} must be an ISO date-time.", details={"field": name})
                qs = qs.filter(**{lookup: when})
        page = self.paginate_queryset(qs.order_by("-created_at"))
        return self.get_paginated_response(RunSerializer(page, many=True).data)


def _uuid(value: str, field: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise Invalid(f"{field} must be a UUID.", details={"field": field}) from None


class RunDetailView(OrgAPIView):
    serializer_class = RunDetailSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: RunDetailSerializer}, summary="One run with its tool calls")
    def get(self, request, run_id):
        run = member_run(self.actor, run_id)
        run = Run.objects.prefetch_related("tool_calls").select_related("version").get(pk=run.pk)
        return Response(RunDetailSerializer(run).data)


class RunStopView(OrgAPIView):
    serializer_class = RunSerializer
    permission_map = {"POST": "agents:run"}

    @extend_schema(request=None, responses={200: RunResultSerializer}, summary="Stop a run")
    def post(self, request, run_id):
        run = member_run(self.actor, run_id)
        request_stop(run)
        run.refresh_from_db()
        return Response(run_result(run))


class RunResumeView(OrgAPIView):
    serializer_class = RunSerializer
    permission_map = {"POST": "agents:run"}

    @extend_schema(request=None, responses={202: RunResultSerializer}, summary="Resume a parked run")
    def post(self, request, run_id):
        run = member_run(self.actor, run_id)
        run = governance.resume_run(actor=self.actor, run=run)
        return Response(run_result(run), status=status.HTTP_202_ACCEPTED)


class QuestionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Question
        fields = ["id", "tool_call_id", "questions", "answers", "status", "created_at", "answered_at"]


class RunQuestionsView(OrgAPIView):
    serializer_class = QuestionSerializer
    permission_map = {"GET": "agents:run"}
    pagination_class = None  # the few ask_user calls of one run

    @extend_schema(responses={200: QuestionSerializer(many=True)}, summary="A run's questions for a person")
    def get(self, request, run_id):
        run = member_run(self.actor, run_id)
        return Response(QuestionSerializer(run.questions.order_by("created_at"), many=True).data)


class AnswersSerializer(serializers.Serializer):
    answers = serializers.ListField(child=serializers.JSONField(), min_length=1, max_length=10)


class RunAnswersView(OrgAPIView):
    serializer_class = AnswersSerializer
    permission_map = {"POST": "agents:run"}

    @extend_schema(request=AnswersSerializer, responses={202: RunResultSerializer},
                   summary="Answer a parked run's questions")
    def post(self, request, run_id):
        data = AnswersSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = member_run(self.actor, run_id)
        run = governance.answer_questions(actor=self.actor, run=run, answers=data.validated_data["answers"])
        return Response(run_result(run), status=status.HTTP_202_ACCEPTED)


class ConversationSerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField()

    class Meta:
        model = Conversation
        # archived_at / tags: the owner's filing (agents.chat.archive_conversation, tag_conversation).
        fields = ["id", "agent_id", "title", "surface", "created_at", "last_active_at", "archived_at", "tags"]


class MessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Message
        # parent_id / on_branch: the message's place in the conversation's tree (agents.branches).
        fields = ["id", "role", "author_label", "content", "thinking", "parts", "attachments", "run_id", "parent_id",
                  "on_branch", "created_at"]


class ConversationListView(OrgAPIView):
    serializer_class = ConversationSerializer
    permission_map = {"GET": "agents:run"}

    @extend_schema(parameters=[
        OpenApiParameter("agent", str),
        OpenApiParameter("archived", str, enum=["false", "true", "all"],
                         description="false (the default): the list without archived ones; true: only archived ones; "
                                     "all: both."),
        OpenApiParameter("tag", str, description="Only those carrying this tag (case-insensitive)."),
    ], responses={200: ConversationSerializer(many=True)}, summary="My conversations")
    def get(self, request):
        qs = Conversation.objects.filter(organization=self.actor.organization, owner_id=self.actor.user_id)
        if request.query_params.get("agent"):
            qs = qs.filter(agent_id=_uuid(request.query_params["agent"], "agent"))
        archived = request.query_params.get("archived", "false")
        if archived not in ("false", "true", "all"):
            raise serializers.ValidationError({"archived": "One of false, true, all."})
        if archived != "all":
            qs = qs.filter(archived_at__isnull=archived == "false")
        # Printable characters only: PostgreSQL's jsonb refuses a NUL, which would otherwise be a 500.
        tag = " ".join("".join(ch for ch in request.query_params.get("tag", "") if ch.isprintable()).split()).lower()
        if tag:
            qs = qs.filter(tags__contains=[tag])
        page = self.paginate_queryset(qs.order_by("-last_active_at"))
        return self.get_paginated_response(ConversationSerializer(page, many=True).data)


class ConversationMessagesView(OrgAPIView):
    serializer_class = MessageSerializer
    permission_map = {"GET": "agents:run"}

    @extend_schema(responses={200: MessageSerializer(many=True)}, summary="A conversation's messages, oldest first")
    def get(self, request, conversation_id):
        conversation = own_conversation(self.actor, conversation_id)
        page = self.paginate_queryset(conversation.messages.order_by("id"))
        return self.get_paginated_response(MessageSerializer(page, many=True).data)
