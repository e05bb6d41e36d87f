"""What the capability catalog and a conversation's workspace answer, for the OpenAPI schema (the views build
these dicts themselves: registry.catalog_json, workspaces.store.listing); tests/api/test_fuzz.py checks every
answer against them."""

from __future__ import annotations

from rest_framework import serializers


class CatalogToolSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    summary = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)
    side_effecting = serializers.BooleanField()
    provider_executed = serializers.BooleanField()


class CatalogKeySerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="The secret kind the capability's key is (Settings → Secrets).")
    kinds = serializers.ListField(child=serializers.CharField(), help_text="Every kind its picker offers.")
    description = serializers.CharField(allow_blank=True)
    required_when = serializers.CharField(allow_blank=True, allow_null=True)


class CatalogEntrySerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    category = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    offers = serializers.CharField(allow_blank=True)
    examples = serializers.ListField(child=serializers.CharField())
    never_does = serializers.CharField(allow_blank=True)
    tools = CatalogToolSerializer(many=True)
    tools_note = serializers.CharField(allow_blank=True)
    scopes = serializers.ListField(child=serializers.CharField())
    key = CatalogKeySerializer(allow_null=True, help_text="The key it needs, if any.")
    config_schema = serializers.DictField(help_text="The JSON Schema of its `config`.")
    voice = serializers.ChoiceField(choices=["live", "hand_off", "never"])
    selectable = serializers.BooleanField()
    recommended = serializers.BooleanField()
    advanced = serializers.BooleanField()
    available = serializers.BooleanField(help_text="Whether this deployment grants every scope it needs.")


class CatalogSerializer(serializers.Serializer):
    capabilities = CatalogEntrySerializer(many=True)
    granted_scopes = serializers.ListField(child=serializers.CharField())


class WorkspaceFileEntrySerializer(serializers.Serializer):
    path = serializers.CharField()
    size = serializers.IntegerField()
    updated_at = serializers.DateTimeField()


class ConversationWorkspaceBodySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    scope = serializers.CharField()
    label = serializers.CharField(allow_blank=True)
    backend = serializers.CharField()
    used_bytes = serializers.IntegerField()
    max_bytes = serializers.IntegerField()
    files = WorkspaceFileEntrySerializer(many=True)


class ConversationWorkspaceSerializer(serializers.Serializer):
    workspace = ConversationWorkspaceBodySerializer(
        allow_null=True, help_text="null when the conversation's agent keeps no files.")


class WorkspaceFileSerializer(serializers.Serializer):
    path = serializers.CharField()
    size = serializers.IntegerField()
    content = serializers.CharField(allow_blank=True)
