"""REST: replays of recorded runs against a target (evals/replays.py): start and list an agent's replays, read
one with its runs side by side, cancel it, and make an evaluation case of a replayed run.

Reads need view on the agent (and only show runs the person may read); starting, cancelling and making a case
need edit and the run right. Another organization's agent, replay or run is 404.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.errors import NotFound
from agents.models import Agent
from evals import replay_gate, replays, run_tags
from evals.api import CaseSerializer
from evals.models import ReplayGate, ReplayResult, ReplaySet
from governance.grants import EDIT, require_agent_access


class SelectionSerializer(serializers.Serializer):
    run_ids = serializers.ListField(child=serializers.UUIDField(), required=False, max_length=replays.MAX_REPLAY_RUNS,
                                    help_text="Exactly these recorded runs (they must be the agent's and readable).")
    version = serializers.IntegerField(required=False, min_value=1, help_text="Runs of this published version.")
    surface = serializers.ChoiceField(choices=list(replays.RECORDED_SURFACES), required=False)
    since = serializers.DateTimeField(required=False, help_text="Runs started at or after (ISO 8601 with offset).")
    until = serializers.DateTimeField(required=False, help_text="Runs started before.")
    tag = serializers.CharField(required=False, max_length=40, help_text=(
        "Only runs carrying this tag (PUT /api/v1/agents/{id}/runs/{run_id}/tags)."))
    feedback = serializers.ChoiceField(choices=list(replays.FEEDBACK_CHOICES), required=False, help_text=(
        "down: only runs whose answer got a 👎; up: only 👍; rated: either, 👎 first; down_first: every run, "
        "👎 first."))
    last = serializers.IntegerField(required=False, min_value=1, max_value=replays.MAX_REPLAY_RUNS,
                                    help_text="Only the newest N of the runs that match (after the 👎-first order).")
    sample = serializers.IntegerField(required=False, min_value=1, max_value=replays.MAX_REPLAY_RUNS,
                                      help_text="A random sample of this many of the runs that match.")


class StartReplaySerializer(serializers.Serializer):
    target = serializers.CharField(default="draft", max_length=40,
                                   help_text="'draft', a published version number, or an environment name.")
    model_profile_id = serializers.UUIDField(required=False, allow_null=True,
                                             help_text="Replay the target on this chat model profile instead.")
    on_mismatch = serializers.ChoiceField(choices=ReplaySet.OnMismatch.choices, default=ReplaySet.OnMismatch.REFUSE,
                                          help_text="A tool call the recording did not make: refused, run for real "
                                                    "when the tool only reads, or stopped for a person.")
    cap_usd = serializers.DecimalField(max_digits=12, decimal_places=4, required=False, min_value=0,
                                       help_text="The most the replay's model requests may cost (default 1 USD).")
    selection = SelectionSerializer(required=False)
    suite_id = serializers.UUIDField(required=False, allow_null=True, help_text=(
        "The evaluation suite whose replay checks give each replayed run its verdict (a judge check: a judge "
        "model's). Without one, a replayed run passes when it completes."))


class VerdictCheckSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    kind = serializers.CharField()
    label = serializers.CharField()
    passed = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)


class ToolCallRowSerializer(serializers.Serializer):
    tool_name = serializers.CharField()
    verdict = serializers.ChoiceField(choices=["same", "different_arguments", "new", "missing"])
    recorded_args = serializers.JSONField(allow_null=True)
    replayed_args = serializers.JSONField(allow_null=True)
    answered_by = serializers.CharField(help_text="recording | refused | executed | stopped ('' when missing)")


class ReplayResultSerializer(serializers.ModelSerializer):
    original_run_id = serializers.UUIDField(source="original_id")
    replay_run_id = serializers.UUIDField(allow_null=True)
    tool_calls = ToolCallRowSerializer(many=True)
    checks = VerdictCheckSerializer(many=True)
    redacted = serializers.SerializerMethodField(help_text=(
        "True when the recorded run is not one you may read (someone else's, without runs:view): its answers, "
        "arguments and reasons are left out; its verdict, changes, tokens and cost stay."))

    class Meta:
        model = ReplayResult
        fields = ["id", "position", "original_run_id", "replay_run_id", "status", "reason", "run_status",
                  "recorded_output", "replayed_output", "answer_changed", "tools_changed", "tool_calls",
                  "recorded_input_tokens", "recorded_output_tokens", "recorded_cost_usd", "replayed_input_tokens",
                  "replayed_output_tokens", "replayed_cost_usd", "verdict", "checks", "judge_cost_usd",
                  "finished_at", "redacted"]

    def get_redacted(self, obj: ReplayResult) -> bool:
        return bool(getattr(obj, "redacted", False))


class ReplaySummarySerializer(serializers.Serializer):
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    changed_answers = serializers.IntegerField()
    changed_tools = serializers.IntegerField()
    recorded_cost_usd = serializers.CharField()
    replayed_cost_usd = serializers.CharField()
    cost_delta_usd = serializers.CharField()
    recorded_tokens = serializers.IntegerField()
    replayed_tokens = serializers.IntegerField()
    passed = serializers.IntegerField(help_text="Replayed runs whose checks all passed.")
    failed = serializers.IntegerField(help_text="Replayed runs that failed a check.")
    judge_cost_usd = serializers.CharField()


class ReplaySetSerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField()
    version_number = serializers.IntegerField(source="version.number")
    suite_id = serializers.UUIDField(allow_null=True)
    checks = serializers.ListField(child=serializers.DictField(), help_text="The checks each run was judged by.")
    summary = serializers.SerializerMethodField()

    class Meta:
        model = ReplaySet
        fields = ["id", "agent_id", "target", "version_number", "selection", "on_mismatch", "cap_usd", "purpose",
                  "suite_id", "checks", "status", "cancel_requested", "summary", "error", "created_at",
                  "started_at", "finished_at"]

    @extend_schema_field(ReplaySummarySerializer)
    def get_summary(self, obj: ReplaySet) -> dict[str, Any]:
        return replays.summary(obj)


class ReplaySetDetailSerializer(ReplaySetSerializer):
    results = serializers.SerializerMethodField()

    class Meta(ReplaySetSerializer.Meta):
        fields = [*ReplaySetSerializer.Meta.fields, "results"]

    @extend_schema_field(ReplayResultSerializer(many=True))
    def get_results(self, obj: ReplaySet) -> list[dict[str, Any]]:
        return ReplayResultSerializer(replays.results_for_reader(self.context["actor"], obj), many=True).data


class MakeCaseSerializer(serializers.Serializer):
    suite_id = serializers.UUIDField()
    name = serializers.CharField(required=False, max_length=120, allow_blank=True)


class AgentReplaysView(BaseOrgView):
    serializer_class = ReplaySetSerializer
    permission_map = {"GET": "agents:view", "POST": "agents:run"}

    def agent(self, agent_id: Any) -> Agent:
        return self.org_get(Agent, agent_id)

    @extend_schema(responses={200: ReplaySetSerializer(many=True), **ERRORS}, summary="An agent's replays, newest first")
    def get(self, request, agent_id):
        qs = replays.agent_replay_sets(self.actor, self.agent(agent_id)).order_by("-created_at", "-id")
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(ReplaySetSerializer(page, many=True).data)

    @extend_schema(request=StartReplaySerializer, responses={202: ReplaySetSerializer, **WRITE_ERRORS},
                   summary="Replay recorded runs against the draft, a version or another model profile")
    def post(self, request, agent_id):
        agent = self.agent(agent_id)
        require_agent_access(self.actor, agent, EDIT)
        self.actor.require("agents:run")  # as start_replay does, before the body is read
        data = self.valid(StartReplaySerializer)
        selection = dict(data.get("selection") or {})
        for key in ("since", "until"):
            if selection.get(key):
                selection[key] = selection[key].isoformat()
        if selection.get("run_ids"):
            selection["run_ids"] = [str(i) for i in selection["run_ids"]]
        replay_set = replays.start_replay(actor=self.actor, agent=agent, data={
            "target": data["target"], "model_profile_id": data.get("model_profile_id"),
            "on_mismatch": data["on_mismatch"], "cap_usd": data.get("cap_usd"), "selection": selection,
            "suite_id": data.get("suite_id")})
        return Response(ReplaySetSerializer(replay_set).data, status=status.HTTP_202_ACCEPTED)


class ReplaySetDetailView(BaseOrgView):
    serializer_class = ReplaySetDetailSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: ReplaySetDetailSerializer, **ERRORS},
                   summary="A replay with its summary and each run side by side with its recording")
    def get(self, request, replay_id):
        replay_set = replays.replay_set_for(self.actor, replay_id)
        return Response(ReplaySetDetailSerializer(replay_set, context={"actor": self.actor}).data)


class ReplayCancelView(BaseOrgView):
    serializer_class = ReplaySetSerializer
    permission_map = {"POST": "agents:run"}

    @extend_schema(request=None, responses={200: ReplaySetSerializer, **WRITE_ERRORS}, summary="Cancel a replay")
    def post(self, request, replay_id):
        replay_set = replays.replay_set_for(self.actor, replay_id, level=EDIT)
        replay_set = replays.cancel_replay(actor=self.actor, replay_set=replay_set)
        return Response(ReplaySetSerializer(replay_set).data)


class ReplayMakeCaseView(BaseOrgView):
    serializer_class = CaseSerializer
    permission_map = {"POST": "agents:edit"}

    @extend_schema(request=MakeCaseSerializer, responses={201: CaseSerializer, **WRITE_ERRORS},
                   summary="Make an evaluation case of a replayed run (its prompt, history, answer and tool calls)")
    def post(self, request, replay_id, result_id):
        replay_set = replays.replay_set_for(self.actor, replay_id, level=EDIT)
        result = replays.result_for(self.actor, replay_set, result_id)
        data = self.valid(MakeCaseSerializer)
        case = replays.make_case(actor=self.actor, result=result, suite_id=data["suite_id"], name=data.get("name") or "")
        from evals.services import case_dict

        return Response(case_dict(case), status=status.HTTP_201_CREATED)


class ReplayGateSerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField(read_only=True)
    suite_id = serializers.UUIDField(allow_null=True, read_only=True)
    updated_by = serializers.CharField(source="updated_by.email", allow_null=True, default=None, read_only=True)
    last_outcome = serializers.CharField(read_only=True, help_text=(
        "What the gate said the last time a publish or a rollout asked it: passed, refused, skipped (nothing "
        "recorded to replay: let through), '' (never asked)."))
    last_replay_set_id = serializers.UUIDField(allow_null=True, read_only=True,
                                               help_text="The replay it ran then (GET /api/v1/replays/{id}).")

    class Meta:
        model = ReplayGate
        fields = ["agent_id", "runs", "surface", "suite_id", "on_mismatch", "cap_usd", "max_failed", "updated_by",
                  "updated_at", "last_outcome", "last_target", "last_message", "last_replay_set_id",
                  "last_checked_at"]


class ReplayGateInputSerializer(serializers.Serializer):
    runs = serializers.IntegerField(default=50, min_value=1, max_value=replays.MAX_REPLAY_RUNS,
                                    help_text="The newest N completed runs of real traffic are replayed.")
    surface = serializers.ChoiceField(choices=["", *replays.RECORDED_SURFACES], default="",
                                      help_text="Only runs of this surface ('' for every surface).")
    suite_id = serializers.UUIDField(required=False, allow_null=True,
                                     help_text="The suite whose replay checks judge each run (else: it completes).")
    on_mismatch = serializers.ChoiceField(choices=ReplaySet.OnMismatch.choices, default=ReplaySet.OnMismatch.REFUSE)
    cap_usd = serializers.DecimalField(max_digits=12, decimal_places=4, required=False, min_value=0,
                                       help_text="The most one gate replay's model requests may cost (default 1).")
    max_failed = serializers.IntegerField(default=0, min_value=0, max_value=replays.MAX_REPLAY_RUNS,
                                          help_text="How many replayed runs may fail and the gate still pass.")


class ReplayGateView(BaseOrgView):
    """The agent's replay gate: publishing (and a rollout's start) replays its newest runs first."""

    serializer_class = ReplayGateSerializer
    permission_map = {"GET": "agents:view", "PUT": "agents:edit", "DELETE": "agents:edit"}

    def agent(self, agent_id: Any) -> Agent:
        return self.org_get(Agent, agent_id)

    @extend_schema(responses={200: ReplayGateSerializer, **ERRORS}, summary="The agent's replay gate (404: none)")
    def get(self, request, agent_id):
        gate = replay_gate.gate_for(self.actor, self.agent(agent_id))
        if gate is None:
            raise NotFound("The agent has no replay gate.")
        return Response(ReplayGateSerializer(gate).data)

    @extend_schema(request=ReplayGateInputSerializer, responses={200: ReplayGateSerializer, **WRITE_ERRORS},
                   summary="Require a replay of the agent's newest runs to pass before it is published")
    def put(self, request, agent_id):
        agent = self.agent(agent_id)
        require_agent_access(self.actor, agent, EDIT)  # refused before the body is read
        data = self.valid(ReplayGateInputSerializer)
        gate = replay_gate.set_gate(actor=self.actor, agent=agent, data={
            **data, "suite_id": str(data["suite_id"]) if data.get("suite_id") else None})
        return Response(ReplayGateSerializer(gate).data)

    @extend_schema(responses={204: None, **ERRORS}, summary="Stop requiring the replay gate")
    def delete(self, request, agent_id):
        replay_gate.remove_gate(actor=self.actor, agent=self.agent(agent_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RunTagsSerializer(serializers.Serializer):
    run_id = serializers.UUIDField(read_only=True)
    tags = serializers.ListField(child=serializers.CharField(max_length=40), max_length=run_tags.MAX_TAGS_PER_RUN,
                                 help_text="Lowercase words (letters, digits, - and _); a PUT replaces the list.")


class TagCountSerializer(serializers.Serializer):
    name = serializers.CharField()
    runs = serializers.IntegerField(help_text="Runs carrying it that you may read.")


class RunTagsView(BaseOrgView):
    """A recorded run's tags, which a replay set may pick runs by (selection `tag`)."""

    serializer_class = RunTagsSerializer
    permission_map = {"GET": "agents:view", "PUT": "agents:edit"}

    @extend_schema(responses={200: RunTagsSerializer, **ERRORS}, summary="A recorded run's tags")
    def get(self, request, agent_id, run_id):
        run = run_tags.run_for(self.actor, self.org_get(Agent, agent_id), run_id)
        return Response({"run_id": str(run.pk), "tags": run_tags.tags_of(run)})

    @extend_schema(request=RunTagsSerializer, responses={200: RunTagsSerializer, **WRITE_ERRORS},
                   summary="Replace a recorded run's tags (editors of the agent, on runs they may read)")
    def put(self, request, agent_id, run_id):
        agent = self.org_get(Agent, agent_id)
        run = run_tags.run_for(self.actor, agent, run_id, level=EDIT)  # refused before the body is read
        data = self.valid(RunTagsSerializer)
        tags = run_tags.set_tags(actor=self.actor, agent=agent, run=run, tags=data["tags"])
        return Response({"run_id": str(run.pk), "tags": tags})


class AgentRunTagsView(BaseOrgView):
    serializer_class = TagCountSerializer
    permission_map = {"GET": "agents:view"}
    pagination_class = None  # the tags of one agent: a short list

    @extend_schema(responses={200: TagCountSerializer(many=True), **ERRORS},
                   summary="The tags on an agent's recorded runs, with how many runs carry each")
    def get(self, request, agent_id):
        return Response(run_tags.agent_tags(self.actor, self.org_get(Agent, agent_id)))
