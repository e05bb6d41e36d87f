"""Rollout endpoints: start one on an environment, read it with its metrics, pause (or resume), advance a step,
promote, abort.

Only who may publish the agent may touch its rollouts (an agent you cannot see answers 404, too weak an access
403); the rules and the metrics are in agents.rollouts."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS
from agents import rollouts
from agents.api import AgentView
from agents.models import Rollout
from governance import grants


class RolloutStartSerializer(serializers.Serializer):
    candidate_version = serializers.IntegerField(min_value=1, help_text="A published version of this agent.")
    share = serializers.IntegerField(min_value=1, max_value=99, help_text="Percent of new sticky keys (1–99).")
    failure_multiple = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=1, required=False,
        help_text="Roll back when the candidate's failed share is this many times the base's (default 2).")
    min_runs = serializers.IntegerField(min_value=1, max_value=1_000_000, required=False,
                                        help_text="Ended candidate runs before a threshold is judged (default 20).")
    cost_increase_pct = serializers.IntegerField(
        min_value=1, max_value=10_000, required=False, allow_null=True,
        help_text="Roll back when cost per run is this % above the base's (default 50; null: no cost threshold).")
    guardrail_multiple = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=1, max_value=1000, required=False, allow_null=True,
        help_text="Roll back when the candidate's share of runs blocked by a guardrail is this many times the "
                  "base's (default 2; null: not watched).")
    rejection_multiple = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=1, max_value=1000, required=False, allow_null=True,
        help_text="Roll back when the candidate's share of runs with a rejected tool call is this many times the "
                  "base's (default 2; null: not watched).")
    thumbs_down_multiple = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=1, max_value=1000, required=False, allow_null=True,
        help_text="Roll back when the candidate's 👎 share of rated answers (at least `min_runs` rated) is this many "
                  "times the base's (default 2; null: not watched).")
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True)
    steps = serializers.ListField(
        child=serializers.IntegerField(min_value=2, max_value=100), required=False, max_length=rollouts.MAX_STEPS,
        help_text="Shares to move through after `share`, ascending (e.g. [25, 50, 100]); 100 promotes.")
    step_minutes = serializers.IntegerField(
        min_value=rollouts.MIN_STEP_MINUTES, max_value=60 * 24 * 90, required=False, allow_null=True,
        help_text="Take each step by itself once the share has held this long, the candidate has `min_runs` ended "
                  "runs and no threshold is crossed. Without it, a person advances the steps.")


class RolloutAdvanceSerializer(serializers.Serializer):
    share = serializers.IntegerField(min_value=2, max_value=100, required=False,
                                     help_text="The new share; without it, the rollout's next step. 100 promotes.")


class RolloutAbortSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True)


class RolloutVersionMetricsSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    runs = serializers.IntegerField(help_text="Ended runs admitted under the rollout on this version.")
    failed = serializers.IntegerField()
    guardrail_blocked = serializers.IntegerField()
    approval_rejected = serializers.IntegerField(help_text="Runs where a person rejected a tool call.")
    rated = serializers.IntegerField(help_text="Runs whose answer someone rated 👍 or 👎.")
    thumbs_down = serializers.IntegerField(help_text="Runs whose answer someone rated 👎.")
    thumbs_down_share = serializers.FloatField(allow_null=True, help_text="👎 among the rated runs.")
    failed_share = serializers.FloatField(allow_null=True)
    cost_usd = serializers.CharField()
    cost_per_run_usd = serializers.CharField(allow_null=True)
    p95_duration_seconds = serializers.FloatField(allow_null=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()


class RolloutComparisonSerializer(serializers.Serializer):
    test = serializers.CharField(help_text="The statistical test used on the failed share.")
    enough_runs = serializers.BooleanField()
    note = serializers.CharField(help_text='"Not enough runs yet: …" until each version has enough ended runs.')
    failed_share_difference = serializers.FloatField(allow_null=True, help_text="Candidate minus base.")
    z = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField(help_text="p < 0.05.")


class RolloutShareComparisonSerializer(serializers.Serializer):
    enough_runs = serializers.BooleanField()
    note = serializers.CharField(help_text='"Not enough runs yet: …" until each version has enough.')
    difference = serializers.FloatField(allow_null=True, help_text="Candidate's share minus base's.")
    z = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField(help_text="p < 0.05 (two-proportion z-test, pooled, two-sided).")


class RolloutComparisonsSerializer(serializers.Serializer):
    failed = RolloutShareComparisonSerializer(help_text="Failed runs of the ended runs.")
    guardrail_blocked = RolloutShareComparisonSerializer(help_text="Runs a guardrail blocked, of the ended runs.")
    approval_rejected = RolloutShareComparisonSerializer(help_text="Runs with a rejected tool call, of the ended runs.")
    thumbs_down = RolloutShareComparisonSerializer(help_text="👎 of the rated answers.")


class RolloutNextStepSerializer(serializers.Serializer):
    share = serializers.IntegerField(allow_null=True, help_text="The next step's share (null: no step left).")
    scheduled = serializers.BooleanField(help_text="Steps advance by themselves (`step_minutes`).")
    waiting_for = serializers.CharField(help_text="Why the scheduled step is not taken yet (empty when due).")


class RolloutMetricsSerializer(serializers.Serializer):
    base = RolloutVersionMetricsSerializer()
    candidate = RolloutVersionMetricsSerializer()
    comparison = RolloutComparisonSerializer()
    comparisons = RolloutComparisonsSerializer()
    next_step = RolloutNextStepSerializer()


class RolloutSerializer(serializers.ModelSerializer):
    base_version = serializers.IntegerField(source="base.number")
    candidate_version = serializers.IntegerField(source="candidate.number")
    started_by = serializers.CharField(source="started_by.email", allow_null=True, default=None)

    class Meta:
        model = Rollout
        fields = ["id", "environment", "base_version", "candidate_version", "share", "status", "failure_multiple",
                  "min_runs", "cost_increase_pct", "guardrail_multiple", "rejection_multiple",
                  "thumbs_down_multiple", "steps", "step_minutes", "stepped_at", "reason", "started_by",
                  "started_at", "ended_at"]


class RolloutDetailSerializer(RolloutSerializer):
    metrics = serializers.SerializerMethodField()

    class Meta(RolloutSerializer.Meta):
        fields = [*RolloutSerializer.Meta.fields, "metrics"]

    @extend_schema_field(RolloutMetricsSerializer)
    def get_metrics(self, rollout: Rollout) -> dict:
        return rollouts.metrics(rollout)


def _detail(rollout: Rollout) -> dict:
    return RolloutDetailSerializer(rollout).data


class RolloutView(AgentView):
    def publishable(self, pk):
        # Loaded at the level the endpoint needs: an agent you cannot see is 404, too weak an access 403.
        return self.agent(pk, level=grants.PUBLISH)

    def rollout(self, pk, name: str, rollout_id) -> Rollout:
        return rollouts.get_rollout(actor=self.actor, agent=self.publishable(pk), environment=name,
                                    rollout_id=rollout_id)


class RolloutStartView(RolloutView):
    @extend_schema(request=RolloutStartSerializer, responses={201: RolloutDetailSerializer, **WRITE_ERRORS},
                   summary="Start a rollout: send a share of the environment's new conversations to a candidate")
    def post(self, request: Request, pk, name: str) -> Response:
        agent = self.publishable(pk)
        data = self.valid(RolloutStartSerializer)
        options = {key: data[key] for key in ("failure_multiple", "min_runs", "cost_increase_pct", "steps",
                                              "step_minutes", "guardrail_multiple", "rejection_multiple",
                                              "thumbs_down_multiple") if key in data}
        rollout = rollouts.start_rollout(actor=self.actor, agent=agent, environment=name,
                                         candidate=data["candidate_version"], share=data["share"],
                                         reason=data.get("reason", ""), **options)
        return Response(_detail(self.rollout(pk, name, rollout.pk)), status=status.HTTP_201_CREATED)


class RolloutDetailView(RolloutView):
    @extend_schema(responses={200: RolloutDetailSerializer, **ERRORS},
                   summary="A rollout with per-version metrics over its window")
    def get(self, request: Request, pk, name: str, rollout_id) -> Response:
        return Response(_detail(self.rollout(pk, name, rollout_id)))


class RolloutPauseView(RolloutView):
    @extend_schema(request=None, responses={200: RolloutDetailSerializer, **WRITE_ERRORS},
                   summary="Pause a rollout (no new keys to the candidate), or resume a paused one")
    def post(self, request: Request, pk, name: str, rollout_id) -> Response:
        rollout = rollouts.pause_rollout(actor=self.actor, rollout=self.rollout(pk, name, rollout_id))
        return Response(_detail(self.rollout(pk, name, rollout.pk)))


class RolloutAdvanceView(RolloutView):
    @extend_schema(request=RolloutAdvanceSerializer, responses={200: RolloutDetailSerializer, **WRITE_ERRORS},
                   summary="Advance: move the candidate's share to the next step (or the share given); 100 promotes")
    def post(self, request: Request, pk, name: str, rollout_id) -> Response:
        found = self.rollout(pk, name, rollout_id)
        data = self.valid(RolloutAdvanceSerializer)
        rollout = rollouts.advance_rollout(actor=self.actor, rollout=found, share=data.get("share"))
        return Response(_detail(self.rollout(pk, name, rollout.pk)))


class RolloutPromoteView(RolloutView):
    @extend_schema(request=None, responses={200: RolloutDetailSerializer, **WRITE_ERRORS},
                   summary="Promote: the candidate becomes the environment's version for everyone")
    def post(self, request: Request, pk, name: str, rollout_id) -> Response:
        rollout = rollouts.promote_rollout(actor=self.actor, rollout=self.rollout(pk, name, rollout_id))
        return Response(_detail(self.rollout(pk, name, rollout.pk)))


class RolloutAbortView(RolloutView):
    @extend_schema(request=RolloutAbortSerializer, responses={200: RolloutDetailSerializer, **WRITE_ERRORS},
                   summary="Abort: everyone goes back to the base version")
    def post(self, request: Request, pk, name: str, rollout_id) -> Response:
        found = self.rollout(pk, name, rollout_id)
        data = self.valid(RolloutAbortSerializer)
        rollout = rollouts.abort_rollout(actor=self.actor, rollout=found, reason=data.get("reason", ""))
        return Response(_detail(self.rollout(pk, name, rollout.pk)))
