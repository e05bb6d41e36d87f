"""REST: an agent's evaluation suites (CRUD, YAML import/export), suite runs (start, list, detail) and the
comparison of two runs.

Reads need view on the agent, changes and runs edit (and the run right); another organization's suite, run
or agent is 404 (governance.grants via evals.services).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS, BaseOrgView
from agenticos.errors import Invalid
from agents.models import Agent
from evals import services
from evals.models import CaseResult, Suite, SuiteRun
from governance.grants import EDIT, require_agent_access


class CaseSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(max_length=120)
    prompt = serializers.CharField()
    history = serializers.ListField(child=serializers.DictField(), required=False,
                                    help_text="A short prior conversation: [{role: user|assistant, content}].")
    attachments = serializers.ListField(child=serializers.DictField(), required=False,
                                        help_text="Text files: [{name, mime: text/plain|text/markdown|text/csv, content}].")
    checks = serializers.ListField(child=serializers.DictField(), required=False, help_text=(
        "[{kind: contains|not_contains|regex|equals|tool_called|tool_not_called|status|max_cost|max_steps|judge, …}]"))
    approvals = serializers.DictField(child=serializers.CharField(), required=False,
                                      help_text="Gated tool id → approve | reject | park.")
    default_approval = serializers.CharField(required=False)
    answers = serializers.DictField(required=False, help_text="ask_user question header → label(s).")


class SuiteSerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField(read_only=True)
    cases = serializers.SerializerMethodField()

    class Meta:
        model = Suite
        fields = ["id", "agent_id", "name", "description", "gates_publish", "replay_checks", "cases", "created_at",
                  "updated_at"]

    @extend_schema_field(CaseSerializer(many=True))
    def get_cases(self, obj: Suite) -> list[dict[str, Any]]:
        return services.suite_cases(obj)


class SuiteSummarySerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField(read_only=True)
    case_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Suite
        fields = ["id", "agent_id", "name", "description", "gates_publish", "case_count", "created_at", "updated_at"]


class SuiteInputSerializer(serializers.Serializer):
    # Cases are checked by evals.services (every problem at once, with field paths); here only the shape.
    name = serializers.CharField(max_length=120, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    gates_publish = serializers.BooleanField(required=False)
    replay_checks = serializers.ListField(child=serializers.DictField(), required=False, help_text=(
        "The checks every replayed run is judged by when a replay names this suite (same kinds as a case's; "
        "a judge check makes the verdict a judge model's)."))
    cases = serializers.ListField(child=serializers.JSONField(), required=False)


class YamlInputSerializer(serializers.Serializer):
    yaml = serializers.CharField(trim_whitespace=False)
    suite_id = serializers.UUIDField(required=False, allow_null=True,
                                     help_text="Replace this suite (and its cases) instead of creating one.")


class CaseResultSerializer(serializers.ModelSerializer):
    run_id = serializers.UUIDField(allow_null=True)
    transcript_url = serializers.SerializerMethodField()

    class Meta:
        model = CaseResult
        fields = ["case_id", "case_name", "position", "status", "reason", "run_id", "run_status", "transcript_url",
                  "output", "checks", "input_tokens", "output_tokens", "steps", "cost_usd", "judge_cost_usd",
                  "duration_ms", "started_at", "finished_at"]

    def get_transcript_url(self, obj: CaseResult) -> str | None:
        return f"/api/v1/runs/{obj.run_id}" if obj.run_id else None


class SuiteRunSerializer(serializers.ModelSerializer):
    suite_id = serializers.UUIDField(allow_null=True)
    version_number = serializers.IntegerField(source="version.number")

    class Meta:
        model = SuiteRun
        fields = ["id", "suite_id", "suite_name", "target", "version_number", "purpose", "status", "total", "passed",
                  "failed", "skipped", "input_tokens", "output_tokens", "cost_usd", "max_concurrent", "error",
                  "created_at", "started_at", "finished_at"]


class SuiteRunDetailSerializer(SuiteRunSerializer):
    results = CaseResultSerializer(many=True)

    class Meta(SuiteRunSerializer.Meta):
        fields = [*SuiteRunSerializer.Meta.fields, "results"]


class StartRunSerializer(serializers.Serializer):
    suite_id = serializers.UUIDField()
    target = serializers.CharField(default="draft", max_length=40,
                                   help_text="'draft', a published version number, or an environment name.")


class SuiteExportSerializer(serializers.Serializer):
    """The exported YAML document (evals/yaml_io.py), which evals/import reads back: a mapping, not a string."""

    kind = serializers.ChoiceField(choices=["eval_suite"])
    format = serializers.IntegerField(help_text="The document format's version.")
    agent = serializers.CharField(help_text="The agent's slug.")
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    gates_publish = serializers.BooleanField()
    replay_checks = serializers.ListField(child=serializers.DictField(), help_text=(
        "The checks a replay naming this suite judges each replayed run by (and the replay gate's)."))
    cases = serializers.ListField(child=serializers.DictField())


class CompareSerializer(serializers.Serializer):
    first = serializers.DictField()
    second = serializers.DictField()
    changed = serializers.ListField(child=serializers.CharField())
    cost_delta_usd = serializers.CharField()
    mean_duration_delta_ms = serializers.IntegerField(allow_null=True)
    cases = serializers.ListField(child=serializers.DictField())


class _AgentView(BaseOrgView):
    permission_map = {"GET": "agents:view"}

    def agent(self, agent_id: Any) -> Agent:
        return self.org_get(Agent, agent_id)


class AgentSuitesView(_AgentView):
    serializer_class = SuiteSummarySerializer

    @extend_schema(responses={200: SuiteSummarySerializer(many=True), **ERRORS}, summary="An agent's evaluation suites")
    def get(self, request, agent_id):
        from django.db.models import Count

        qs = services.agent_suites(self.actor, self.agent(agent_id)).annotate(case_count=Count("cases"))
        page = self.paginate_queryset(qs.order_by("name", "id"))
        return self.get_paginated_response(SuiteSummarySerializer(page, many=True).data)

    @extend_schema(request=SuiteInputSerializer, responses={201: SuiteSerializer, **WRITE_ERRORS},
                   summary="Create an evaluation suite with its cases")
    def post(self, request, agent_id):
        agent = self.agent(agent_id)
        require_agent_access(self.actor, agent, EDIT)  # refused before the body is read
        self.valid(SuiteInputSerializer)
        suite = services.create_suite(actor=self.actor, agent=agent, data=dict(request.data))
        return Response(SuiteSerializer(suite).data, status=status.HTTP_201_CREATED)


class SuiteDetailView(_AgentView):
    serializer_class = SuiteSerializer

    @extend_schema(responses={200: SuiteSerializer, **ERRORS}, summary="An evaluation suite with its cases")
    def get(self, request, agent_id, suite_id):
        return Response(SuiteSerializer(services.suite_for(self.actor, self.agent(agent_id), suite_id)).data)

    @extend_schema(request=SuiteInputSerializer, responses={200: SuiteSerializer, **WRITE_ERRORS},
                   summary="Change a suite (cases, when given, replace the whole list)")
    def patch(self, request, agent_id, suite_id):
        suite = services.suite_for(self.actor, self.agent(agent_id), suite_id, level=EDIT)
        self.valid(SuiteInputSerializer)
        suite = services.update_suite(actor=self.actor, suite=suite, data=dict(request.data))
        return Response(SuiteSerializer(suite).data)

    @extend_schema(responses={204: None, **ERRORS}, summary="Delete a suite (its runs stay, with their results)")
    def delete(self, request, agent_id, suite_id):
        suite = services.suite_for(self.actor, self.agent(agent_id), suite_id, level=EDIT)
        services.delete_suite(actor=self.actor, suite=suite)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SuiteExportView(_AgentView):
    serializer_class = None

    @extend_schema(responses={(200, "application/yaml"): SuiteExportSerializer, **ERRORS}, summary="A suite as YAML")
    def get(self, request, agent_id, suite_id):
        suite = services.suite_for(self.actor, self.agent(agent_id), suite_id)
        text = services.export_suite_yaml(actor=self.actor, suite=suite)
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{suite.agent.slug}-evals.yaml"'
        return response


class SuiteImportView(_AgentView):
    serializer_class = SuiteSerializer

    @extend_schema(request=YamlInputSerializer, responses={201: SuiteSerializer, 200: SuiteSerializer, **WRITE_ERRORS},
                   summary="Create a suite from YAML, or replace one")
    def post(self, request, agent_id):
        agent = self.agent(agent_id)
        require_agent_access(self.actor, agent, EDIT)
        data = self.valid(YamlInputSerializer)
        existing = services.suite_for(self.actor, agent, data["suite_id"], level=EDIT) if data.get("suite_id") else None
        suite = services.import_suite_yaml(actor=self.actor, agent=agent, text=data["yaml"], suite=existing)
        return Response(SuiteSerializer(suite).data, status=status.HTTP_200_OK if existing else status.HTTP_201_CREATED)


class AgentSuiteRunsView(_AgentView):
    serializer_class = SuiteRunSerializer

    @extend_schema(responses={200: SuiteRunSerializer(many=True), **ERRORS}, summary="An agent's suite runs, newest first")
    def get(self, request, agent_id):
        qs = services.agent_suite_runs(self.actor, self.agent(agent_id)).order_by("-created_at", "-id")
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(SuiteRunSerializer(page, many=True).data)

    @extend_schema(request=StartRunSerializer, responses={202: SuiteRunSerializer, **WRITE_ERRORS},
                   summary="Run a suite against the draft or a published version (cases run in the background)")
    def post(self, request, agent_id):
        agent = self.agent(agent_id)
        require_agent_access(self.actor, agent, EDIT)
        self.actor.require("agents:run")  # as start_suite_run does, before the body is read
        data = self.valid(StartRunSerializer)
        suite = services.suite_for(self.actor, agent, data["suite_id"], level=EDIT)
        suite_run = services.start_suite_run(actor=self.actor, suite=suite, target=data["target"])
        return Response(SuiteRunSerializer(suite_run).data, status=status.HTTP_202_ACCEPTED)


class SuiteRunDetailView(BaseOrgView):
    serializer_class = SuiteRunDetailSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(responses={200: SuiteRunDetailSerializer, **ERRORS},
                   summary="A suite run with its results per case (checks, transcript, tokens, cost, duration)")
    def get(self, request, run_id):
        suite_run = services.suite_run_for(self.actor, run_id)
        suite_run = SuiteRun.objects.select_related("version").prefetch_related("results").get(pk=suite_run.pk)
        return Response(SuiteRunDetailSerializer(suite_run).data)


class SuiteRunCompareView(BaseOrgView):
    serializer_class = CompareSerializer
    permission_map = {"GET": "agents:view"}

    @extend_schema(parameters=[OpenApiParameter("with", str, required=True, description="The other suite run's id.")],
                   responses={200: CompareSerializer, **ERRORS},
                   summary="Compare two suite runs of one agent: changed outcomes, cost and latency deltas")
    def get(self, request, run_id):
        first = services.suite_run_for(self.actor, run_id)
        other = request.query_params.get("with")
        if not other:
            raise Invalid("Name the other suite run with ?with=<id>.", details={"field": "with"})
        second = services.suite_run_for(self.actor, other)
        return Response(services.compare_runs(actor=self.actor, first=first, second=second))
