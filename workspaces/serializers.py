"""What /api/v1/sandbox-connections accepts and answers, for the OpenAPI schema. The views build their JSON by
hand (workspaces.api.connection_json, sandbox_json) and `connections` validates the input: these serializers
describe that JSON, they are not what checks it."""

from __future__ import annotations

from rest_framework import serializers

from workspaces import connections


class SandboxConnectionSerializer(serializers.Serializer):
    """One serializer for both directions so the `kind` choice set lives in one component (a second component
    with the same field name and choices would collide with the other `kind` enums of the schema)."""

    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(max_length=80, help_text="1-80 characters, unique in the organization.")
    kind = serializers.ChoiceField(choices=list(connections.KINDS.items()), required=False,
                                   help_text="What answers at the URL (sandboxd when left out).")
    is_deployment = serializers.BooleanField(read_only=True, help_text="The deployment's own sandbox.")
    is_default = serializers.BooleanField(required=False, help_text="Sent on register: make it the default.")
    url = serializers.CharField(max_length=2000, help_text="The service's http(s) URL; empty for the deployment's "
                                                           "own sandbox, whose address is never shown.")
    has_credential = serializers.BooleanField(read_only=True)
    secret_id = serializers.UUIDField(allow_null=True, help_text="The organization's secret holding the service's "
                                                                 "token (required to register).")
    created_at = serializers.DateTimeField(read_only=True)


class SandboxConnectionListSerializer(serializers.Serializer):
    results = SandboxConnectionSerializer(many=True)


class RuntimeSerializer(serializers.Serializer):
    alias = serializers.CharField()
    description = serializers.CharField(allow_blank=True)


class RuntimeListSerializer(serializers.Serializer):
    results = RuntimeSerializer(many=True)


class SandboxAgentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class SandboxSerializer(serializers.Serializer):
    workspace_id = serializers.UUIDField()
    agent = SandboxAgentSerializer()
    scope = serializers.CharField()
    label = serializers.CharField(allow_blank=True)
    runtime = serializers.CharField(allow_null=True)
    idle_seconds = serializers.IntegerField(allow_null=True)
    running = serializers.IntegerField(help_text="Commands running now.")
    memory_kb = serializers.IntegerField(allow_null=True, help_text="Peak memory of its last command.")


class SandboxListSerializer(serializers.Serializer):
    results = SandboxSerializer(many=True)


class SandboxActivitySerializer(serializers.Serializer):
    """One entry of sandboxd's activity log; which optional keys appear depends on the kind."""

    at = serializers.FloatField(allow_null=True, help_text="Unix time.")
    kind = serializers.CharField(allow_null=True, help_text="opened, attached, exec, exit, write, remove, task, …")
    command = serializers.CharField(required=False)
    exit_code = serializers.IntegerField(required=False, allow_null=True)
    timed_out = serializers.BooleanField(required=False)
    disk_full = serializers.BooleanField(required=False)
    duration_ms = serializers.IntegerField(required=False)
    path = serializers.CharField(required=False)
    size = serializers.IntegerField(required=False)
    runtime = serializers.CharField(required=False, allow_null=True)


class SandboxDetailSerializer(SandboxSerializer):
    disk_bytes = serializers.IntegerField(allow_null=True)
    disk_cap = serializers.IntegerField(allow_null=True)
    activity = SandboxActivitySerializer(many=True)
