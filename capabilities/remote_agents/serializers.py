"""What /api/v1/remote-agents accepts and answers, for the OpenAPI schema. services.remote_agent_json builds the
JSON and services validates the input (it reads the agent card): these serializers describe, they do not check."""

from __future__ import annotations

from rest_framework import serializers


class RemoteAgentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True, help_text="From the agent card.")
    card_url = serializers.CharField(help_text="Shown without any credentials the URL carried.")
    endpoint_url = serializers.CharField(help_text="Where the card says the agent answers.")
    secret_id = serializers.UUIDField(allow_null=True)
    created_by = serializers.IntegerField(allow_null=True, help_text="The user who registered it.")
    created_at = serializers.DateTimeField()
    checked_at = serializers.DateTimeField(help_text="When its card was last read.")


class RemoteAgentListSerializer(serializers.Serializer):
    results = RemoteAgentSerializer(many=True)


class RemoteAgentCreateSerializer(serializers.Serializer):
    card_url = serializers.CharField(max_length=2000, help_text="The A2A agent card's http(s) URL; it is read now.")
    secret_id = serializers.UUIDField(required=False, allow_null=True,
                                      help_text="A secret of the organization sent as the card's and agent's key.")
    name = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=120,
                                 help_text="The card's name when left out.")


class RemoteAgentUpdateSerializer(serializers.Serializer):
    """Any subset; the card is read again on every change."""

    card_url = serializers.CharField(required=False, allow_null=True, max_length=2000)
    secret_id = serializers.UUIDField(required=False, allow_null=True)
    name = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=120)
