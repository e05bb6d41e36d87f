"""Shapes of the agents API."""

from __future__ import annotations

from rest_framework import serializers

from agenticos.serializers import ID_MAX
from agents.models import Agent, AgentVersion, Environment, ModelProfile, Provider, Visibility
from governance.grants import LEVELS

# Column ranges in PostgreSQL: integer fields taken as input are bounded to them, so an overflow is a 400 naming
# the field (and the schema says so), never a DataError.
POSITIVE_INT_MAX = 2**31 - 1  # PositiveIntegerField (user ids: agenticos.serializers.ID_MAX)


class SecretRefSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    hint = serializers.CharField()


class ModelProfileSerializer(serializers.ModelSerializer):
    secret = SecretRefSerializer(read_only=True, allow_null=True)
    fallback_ids = serializers.SerializerMethodField()

    class Meta:
        model = ModelProfile
        fields = ["id", "label", "kind", "provider", "model", "secret", "base_url", "context_window", "settings",
                  "fallback_ids", "created_at"]

    def get_fallback_ids(self, obj: ModelProfile) -> list[str]:
        return [str(f.pk) for f in obj.fallbacks.all()]


class ModelProfileWriteSerializer(serializers.Serializer):
    label = serializers.CharField(max_length=120)
    kind = serializers.ChoiceField(choices=ModelProfile.Kind.choices, default=ModelProfile.Kind.CHAT)
    provider = serializers.ChoiceField(choices=Provider.choices)
    model = serializers.CharField(max_length=200)
    secret_id = serializers.UUIDField(required=False, allow_null=True)
    base_url = serializers.CharField(max_length=500, required=False, allow_blank=True)
    context_window = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                              max_value=POSITIVE_INT_MAX)
    settings = serializers.DictField(required=False)
    fallback_ids = serializers.ListField(child=serializers.UUIDField(), required=False)


class UserRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.EmailField()


class EnvironmentSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version.number")
    version_id = serializers.UUIDField(source="version.id")

    class Meta:
        model = Environment
        fields = ["name", "version", "version_id", "tracks_latest", "updated_at"]


class AgentSerializer(serializers.ModelSerializer):
    owner = UserRefSerializer(read_only=True, allow_null=True)
    access = serializers.SerializerMethodField(help_text="Your effective access: view, use, edit or publish.")
    environments = EnvironmentSerializer(many=True, read_only=True)
    description = serializers.SerializerMethodField()

    class Meta:
        model = Agent
        fields = ["id", "slug", "name", "description", "visibility", "owner", "access", "environments",
                  "created_at", "updated_at"]

    def get_access(self, obj: Agent) -> str | None:
        return self.context["access"](obj)

    def get_description(self, obj: Agent) -> str:
        return (obj.draft_spec or {}).get("description", "")


class AgentDetailSerializer(AgentSerializer):
    draft_spec = serializers.JSONField(read_only=True)
    latest_version = serializers.SerializerMethodField()

    class Meta(AgentSerializer.Meta):
        fields = [*AgentSerializer.Meta.fields, "draft_spec", "latest_version"]

    def get_latest_version(self, obj: Agent) -> int | None:
        return obj.versions.filter(number__gt=0).order_by("-number").values_list("number", flat=True).first()


class AgentCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    slug = serializers.CharField(max_length=200, required=False)
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.ORGANIZATION)
    spec = serializers.JSONField(required=False, help_text="An AgentSpec; validated with field paths (422).")


class AgentUpdateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    slug = serializers.CharField(max_length=200, required=False)
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False)
    spec = serializers.JSONField(required=False, help_text="The whole new draft spec.")


class PublishSerializer(serializers.Serializer):
    note = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class VersionSerializer(serializers.ModelSerializer):
    published_by = serializers.EmailField(source="published_by.email", read_only=True, default=None)

    class Meta:
        model = AgentVersion
        fields = ["id", "number", "note", "published_by", "created_at"]


class VersionDetailSerializer(VersionSerializer):
    class Meta(VersionSerializer.Meta):
        fields = [*VersionSerializer.Meta.fields, "spec"]


class PromoteSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1, max_value=POSITIVE_INT_MAX)


class ChangeSerializer(serializers.Serializer):
    path = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)


class TextDiffSerializer(serializers.Serializer):
    path = serializers.CharField()
    diff = serializers.CharField()


class DiffSerializer(serializers.Serializer):
    # "from" is a keyword; declared below.
    to = serializers.CharField()
    changes = ChangeSerializer(many=True)
    text_diffs = TextDiffSerializer(many=True)
    changed_paths = serializers.ListField(child=serializers.CharField())


DiffSerializer._declared_fields["from"] = serializers.CharField()


class AgentExportSerializer(serializers.Serializer):
    """The exported YAML document (agents/yaml_io.py), which /agents/import reads back: a mapping, not a string."""

    kind = serializers.ChoiceField(choices=["agent"])
    format = serializers.IntegerField(help_text="The document format's version.")
    slug = serializers.CharField()
    visibility = serializers.ChoiceField(choices=Visibility.choices)
    version = serializers.IntegerField(required=False, help_text="Only when a published version was exported.")
    spec = serializers.DictField(help_text="The AgentSpec.")


class ImportSerializer(serializers.Serializer):
    yaml = serializers.CharField(trim_whitespace=False)
    agent_id = serializers.UUIDField(required=False, help_text="Replace this agent's draft instead of creating one.")


class GrantSerializer(serializers.Serializer):
    user_id = serializers.IntegerField()
    email = serializers.EmailField()
    level = serializers.ChoiceField(choices=[(lv, lv) for lv in LEVELS])


class GrantCreateSerializer(serializers.Serializer):
    user_id = serializers.IntegerField(min_value=1, max_value=ID_MAX)
    level = serializers.ChoiceField(choices=[(lv, lv) for lv in LEVELS])
