"""REST: an agent's triggers, one trigger, pause / resume / rotate-secret / fire, and its firings.

Reads need view on the agent, changes edit (governance.grants); another organization's trigger is 404.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agents.models import Agent
from governance.grants import EDIT, require_agent_access
from triggers import firing, schedule, services
from triggers.models import Trigger, TriggerFiring


class TriggerSerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField()
    creator = serializers.SerializerMethodField()
    webhook_url = serializers.SerializerMethodField()
    schedule_description = serializers.SerializerMethodField()
    delivery_conversation_id = serializers.UUIDField(allow_null=True)
    delivery_binding_id = serializers.UUIDField(allow_null=True)

    class Meta:
        model = Trigger
        fields = [
            "id", "agent_id", "name", "kind", "environment", "prompt", "enabled", "run_as_creator", "creator",
            "cron", "every_seconds", "timezone", "starts_at", "ends_at", "overlap", "schedule_description",
            "next_run_at", "last_fired_at", "webhook_url", "delivery", "delivery_conversation_id",
            "delivery_binding_id", "delivery_chat_id", "delivery_thread", "created_at", "updated_at",
        ]

    def get_creator(self, obj: Trigger) -> str | None:
        return obj.creator.email if obj.creator else None

    def get_webhook_url(self, obj: Trigger) -> str | None:
        return services.webhook_url(obj)

    def get_schedule_description(self, obj: Trigger) -> str:
        if obj.cron:
            return schedule.describe(obj.cron)
        return f"Every {obj.every_seconds} seconds" if obj.every_seconds else ""


class TriggerCreatedSerializer(TriggerSerializer):
    signing_secret = serializers.CharField(allow_null=True, help_text="Event triggers: shown this once.")

    class Meta(TriggerSerializer.Meta):
        fields = [*TriggerSerializer.Meta.fields, "signing_secret"]


class TriggerInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    kind = serializers.ChoiceField(choices=Trigger.Kind.choices, required=False)
    prompt = serializers.CharField(required=False, allow_blank=True)
    environment = serializers.SlugField(max_length=40, required=False)
    enabled = serializers.BooleanField(required=False)
    run_as_creator = serializers.BooleanField(required=False)
    cron = serializers.CharField(max_length=120, required=False, allow_blank=True)
    every_seconds = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    timezone = serializers.CharField(max_length=64, required=False)
    starts_at = serializers.DateTimeField(required=False, allow_null=True)
    ends_at = serializers.DateTimeField(required=False, allow_null=True)
    overlap = serializers.ChoiceField(choices=Trigger.Overlap.choices, required=False)
    delivery = serializers.ChoiceField(choices=Trigger.Delivery.choices, required=False)
    delivery_binding_id = serializers.UUIDField(required=False, allow_null=True)
    delivery_chat_id = serializers.CharField(max_length=200, required=False, allow_blank=True)
    delivery_thread = serializers.CharField(max_length=200, required=False, allow_blank=True)


class FiringSerializer(serializers.ModelSerializer):
    run_id = serializers.UUIDField(allow_null=True)
    run_status = serializers.CharField(source="run.status", allow_null=True, default=None)

    class Meta:
        model = TriggerFiring
        fields = ["id", "due_at", "source", "status", "reason", "run_id", "run_status", "created_at"]


class TriggerSecretSerializer(serializers.Serializer):
    signing_secret = serializers.CharField()


class FiredSerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    firing_id = serializers.IntegerField()


def _created(trigger: Trigger, secret: str | None) -> dict[str, Any]:
    data = dict(TriggerSerializer(trigger).data)
    data["signing_secret"] = secret
    return data


class AgentTriggersView(BaseOrgView):
    serializer_class = TriggerSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: TriggerSerializer(many=True), **ERRORS}, summary="An agent's triggers")
    def get(self, request, agent_id):
        agent = self.org_get(Agent, agent_id)
        qs = services.agent_triggers(self.actor, agent).order_by("name", "id")
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(TriggerSerializer(page, many=True).data)

    @extend_schema(request=TriggerInputSerializer, responses={201: TriggerCreatedSerializer, **WRITE_ERRORS},
                   summary="Create a trigger (an event trigger's signing secret is in this answer only)")
    def post(self, request, agent_id):
        agent = self.org_get(Agent, agent_id)
        # Who may not add a trigger is refused (404/403) before the body is read; create_trigger checks again.
        require_agent_access(self.actor, agent, EDIT)
        data = self.valid(TriggerInputSerializer)
        trigger, secret = services.create_trigger(actor=self.actor, agent=agent, data=data)
        return Response(_created(trigger, secret), status=status.HTTP_201_CREATED)


class TriggerDetailView(BaseOrgView):
    serializer_class = TriggerSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: TriggerSerializer, **ERRORS}, summary="A trigger")
    def get(self, request, trigger_id):
        return Response(TriggerSerializer(services.trigger_for(self.actor, trigger_id)).data)

    @extend_schema(request=TriggerInputSerializer, responses={200: TriggerSerializer, **WRITE_ERRORS},
                   summary="Change a trigger (kind cannot change)")
    def patch(self, request, trigger_id):
        # Who may not change it is refused (404/403) before the body is read; update_trigger checks again.
        trigger = services.trigger_for(self.actor, trigger_id, level=EDIT)
        data = self.valid(TriggerInputSerializer)
        data.pop("kind", None)
        trigger = services.update_trigger(actor=self.actor, trigger=trigger, data=data)
        return Response(TriggerSerializer(trigger).data)

    @extend_schema(responses={204: None, **ERRORS}, summary="Delete a trigger (its runs stay in the ledger)")
    def delete(self, request, trigger_id):
        services.delete_trigger(actor=self.actor, trigger=services.trigger_for(self.actor, trigger_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TriggerPauseView(BaseOrgView):
    serializer_class = TriggerSerializer
    permission_map: dict[str, str] = {}  # edit access on the agent, checked by the service
    enabled = False

    @extend_schema(request=None, responses={200: TriggerSerializer, **ERRORS}, summary="Pause or resume a trigger")
    def post(self, request, trigger_id):
        trigger = services.trigger_for(self.actor, trigger_id)
        trigger = services.set_enabled(actor=self.actor, trigger=trigger, enabled=self.enabled)
        return Response(TriggerSerializer(trigger).data)


class TriggerResumeView(TriggerPauseView):
    enabled = True


class TriggerRotateSecretView(BaseOrgView):
    serializer_class = TriggerSecretSerializer
    permission_map: dict[str, str] = {}  # edit access on the agent, checked by the service

    @extend_schema(request=None, responses={200: TriggerSecretSerializer, **WRITE_ERRORS},
                   summary="A new signing secret (shown this once; the old one stops working)")
    def post(self, request, trigger_id):
        trigger = services.trigger_for(self.actor, trigger_id)
        return Response({"signing_secret": services.rotate_secret(actor=self.actor, trigger=trigger)})


class TriggerFireView(BaseOrgView):
    serializer_class = FiredSerializer
    permission_map: dict[str, str] = {}  # edit access on the agent, checked by the service

    @extend_schema(request=None, responses={202: FiredSerializer, **WRITE_ERRORS}, summary="Run a trigger now")
    def post(self, request, trigger_id):
        trigger = services.trigger_for(self.actor, trigger_id)
        fired = firing.fire_now(actor=self.actor, trigger=trigger)
        return Response({"run_id": str(fired.run.pk) if fired.run else None, "firing_id": fired.firing.pk}, status=status.HTTP_202_ACCEPTED)


class TriggerRunsView(BaseOrgView):
    serializer_class = FiringSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: FiringSerializer(many=True), **ERRORS},
                   summary="A trigger's firings, newest first, with their runs")
    def get(self, request, trigger_id):
        trigger = services.trigger_for(self.actor, trigger_id)
        qs = TriggerFiring.objects.filter(trigger=trigger, organization=self.actor.organization).select_related("run")
        page = self.paginate_queryset(qs.order_by("-created_at", "-id"))
        return self.get_paginated_response(FiringSerializer(page, many=True).data)
