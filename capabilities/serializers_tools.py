"""What the tools API (capabilities.api_tools, agents.api_tool_builder) accepts and answers, for /api/schema/.

The views build their JSON by hand (tool_json, draft_json, ...) and validate input in the services (the pydantic
Definition of custom_tools.schema, the connection services), so these serializers describe; they do not
validate. Each field mirrors a key the view writes or reads: change both together
(tests/tools/test_tools_schema.py checks real answers against the schema)."""

from __future__ import annotations

from typing import get_args

from rest_framework import serializers

from capabilities.custom_tools import runtime
from capabilities.custom_tools.schema import Location, ParamType, WarningLevel
from capabilities.models import CustomTool, DatabaseConnection, McpConnection, ToolDraft, ToolKit

# ------------------------------------------------------------------ a custom tool's definition


class ToolParameterSerializer(serializers.Serializer):
    """One named field of the call (custom_tools.schema.Param)."""

    name = serializers.CharField(max_length=100, help_text="Dots nest a body field: customer.email.")
    location = serializers.ChoiceField(choices=list(get_args(Location)))
    type = serializers.ChoiceField(choices=list(get_args(ParamType)), required=False, default="string")
    required = serializers.BooleanField(required=False, default=False)
    mode = serializers.ChoiceField(choices=["ai", "fixed"], required=False, default="ai",
                                   help_text="ai: the model fills it; fixed: `value` is always sent.")
    value = serializers.JSONField(required=False, allow_null=True, help_text="The value of a fixed parameter.")
    description = serializers.CharField(max_length=1000, required=False, allow_blank=True)
    enum = serializers.ListField(child=serializers.JSONField(), required=False, allow_null=True)


class ToolAuthSerializer(serializers.Serializer):
    """How the credential is put into the call (custom_tools.schema.Auth); the secret is `credential_id`."""

    family = serializers.ChoiceField(choices=["none", "header", "query", "hmac", "jwt"], required=False,
                                     default="none")
    header_name = serializers.CharField(max_length=100, required=False)
    prefix = serializers.CharField(max_length=40, required=False, allow_blank=True)
    query_name = serializers.CharField(max_length=100, required=False)
    signature_header = serializers.CharField(max_length=100, required=False)
    timestamp_header = serializers.CharField(max_length=100, required=False)
    jwt_algorithm = serializers.ChoiceField(choices=["HS256", "HS384", "HS512"], required=False)
    jwt_claims = serializers.DictField(required=False)
    jwt_ttl_secs = serializers.IntegerField(min_value=10, max_value=3600, required=False)


class ToolWarningSerializer(serializers.Serializer):
    level = serializers.ChoiceField(choices=list(get_args(WarningLevel)), required=False, default="warning")
    text = serializers.CharField(max_length=1000)


class ToolSampleOutputSerializer(serializers.Serializer):
    label = serializers.CharField()
    content = serializers.CharField(help_text="A compact copy of a response (at most about 4,000 characters).")


class ToolDefinitionSerializer(serializers.Serializer):
    """The call and what the agent is told about it (custom_tools.schema.Definition)."""

    name = serializers.CharField(max_length=120)
    alias = serializers.RegexField(r"^[a-z][a-z0-9_]{0,63}$", help_text="What the agent calls; unique in the "
                                                                        "organization.")
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    usage_notes = serializers.CharField(max_length=8000, required=False, allow_blank=True)
    method = serializers.ChoiceField(choices=CustomTool.Method.values, required=False, default="GET")
    url = serializers.CharField(min_length=8, max_length=2000, help_text="http(s) URL; {name} for a path "
                                                                         "parameter.")
    parameters = ToolParameterSerializer(many=True, required=False)
    auth = ToolAuthSerializer(required=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False)
    timeout_secs = serializers.FloatField(max_value=120, required=False, help_text="Over 0, at most 120.")


# ------------------------------------------------------------------ custom tools and templates


class CustomToolSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    alias = serializers.CharField()
    description = serializers.CharField()
    usage_notes = serializers.CharField()
    method = serializers.ChoiceField(choices=CustomTool.Method.values)
    url = serializers.CharField()
    parameters = ToolParameterSerializer(many=True)
    auth = ToolAuthSerializer()
    credential_id = serializers.UUIDField(allow_null=True, help_text="The vault secret it calls with (never "
                                                                     "its value).")
    tags = serializers.ListField(child=serializers.CharField())
    warnings = ToolWarningSerializer(many=True)
    sample_outputs = ToolSampleOutputSerializer(many=True)
    timeout_secs = serializers.FloatField()
    kit_name = serializers.CharField(help_text="The kit it was created from; empty if none.")
    template_key = serializers.CharField(help_text="The template it was installed from; empty if none.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class CustomToolListSerializer(serializers.Serializer):
    results = CustomToolSerializer(many=True)


class CustomToolWriteSerializer(ToolDefinitionSerializer):
    """A new tool (POST), or the fields to change (PATCH: the rest of the definition is kept)."""

    credential_id = serializers.UUIDField(required=False, allow_null=True,
                                          help_text="A secret of the organization (needs secrets:view).")
    warnings = ToolWarningSerializer(many=True, required=False)


class ToolTestInputSerializer(serializers.Serializer):
    args = serializers.DictField(required=False, help_text="The arguments, by the names the model fills "
                                                           "(dots and dashes become '_').")


class ToolTestResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    kind = serializers.ChoiceField(choices=list(get_args(runtime.Kind)),
                                   help_text="ok, or how the call failed (capabilities.failures).")
    status = serializers.IntegerField(allow_null=True, help_text="The HTTP status, if an answer came.")
    preview = serializers.CharField(help_text="A compact view of the answer or of the error.")


class ToolTemplateSerializer(serializers.Serializer):
    key = serializers.CharField()
    provider = serializers.CharField()
    name = serializers.CharField()
    alias = serializers.CharField()
    description = serializers.CharField()
    method = serializers.ChoiceField(choices=CustomTool.Method.values)
    url = serializers.CharField()
    auth_family = serializers.CharField()


class ToolTemplateListSerializer(serializers.Serializer):
    results = ToolTemplateSerializer(many=True)


class ToolTemplateInstallSerializer(serializers.Serializer):
    alias = serializers.CharField(required=False, allow_null=True, help_text="Instead of the template's alias.")
    credential_id = serializers.UUIDField(required=False, allow_null=True)


# ------------------------------------------------------------------ builder sessions, kits, drafts


class ToolDraftTestSerializer(serializers.Serializer):
    """The last real test call of a draft (all null/empty until one ran)."""

    ok = serializers.BooleanField(allow_null=True)
    status = serializers.IntegerField(allow_null=True)
    preview = serializers.CharField()
    error = serializers.CharField()
    args = serializers.DictField()
    at = serializers.DateTimeField(allow_null=True)


class ToolDraftSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kit_id = serializers.UUIDField()
    name = serializers.CharField()
    state = serializers.ChoiceField(choices=ToolDraft.State.values)
    definition = serializers.DictField(help_text="Empty until configured; then the tool definition.")
    warnings = ToolWarningSerializer(many=True)
    sample_outputs = ToolSampleOutputSerializer(many=True)
    test = ToolDraftTestSerializer()
    created_tool_id = serializers.UUIDField(allow_null=True)


class ToolKitSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    session_id = serializers.UUIDField()
    name = serializers.CharField()
    provider = serializers.CharField()
    credential_id = serializers.UUIDField(allow_null=True)
    warnings = ToolWarningSerializer(many=True)
    status = serializers.ChoiceField(choices=ToolKit.Status.values)
    drafts = ToolDraftSerializer(many=True)


class ToolBuilderSessionSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()
    conversation_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()


class ToolBuilderSessionSerializer(ToolBuilderSessionSummarySerializer):
    kits = ToolKitSerializer(many=True)


class ToolBuilderSessionListSerializer(serializers.Serializer):
    results = ToolBuilderSessionSummarySerializer(many=True)


class ToolBuilderSessionCreateSerializer(serializers.Serializer):
    title = serializers.CharField(required=False, allow_blank=True, help_text="At most 200 characters are kept.")


class ToolKitCreateSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Required; at most 200 characters are kept.")
    provider = serializers.CharField(required=False, allow_blank=True)
    credential_id = serializers.UUIDField(required=False, allow_null=True)
    warnings = ToolWarningSerializer(many=True, required=False, help_text="Kit-wide: every tool gets them.")


class ToolDraftCreateSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Required; at most 120 characters are kept.")


class ToolDraftActionSerializer(serializers.Serializer):
    """One body for the four actions; each reads its own fields and ignores the rest."""

    definition = ToolDefinitionSerializer(required=False, help_text="configure: the tool definition.")
    args = serializers.DictField(required=False, help_text="test: the arguments of the real call.")
    # A plain string here: the same choice set as ToolWarning.level in a second component would be an enum
    # naming collision in drf-spectacular; the values are the same (a wrong one is a 422).
    level = serializers.CharField(required=False, allow_null=True,
                                  help_text="warnings: info, warning (the default) or critical.")
    text = serializers.CharField(required=False, allow_null=True, help_text="warnings: the warning's text.")
    label = serializers.CharField(required=False, allow_null=True, help_text="samples: its label.")
    content = serializers.JSONField(required=False, allow_null=True,
                                    help_text="samples: what to keep; the last test's full answer if absent.")


class ToolKitFinalizedSerializer(serializers.Serializer):
    tools = CustomToolSerializer(many=True)


class ToolBuilderTurnSerializer(serializers.Serializer):
    prompt = serializers.CharField(help_text="What to build.")
    model_profile_id = serializers.UUIDField(required=False, allow_null=True,
                                             help_text="A chat model of the organization; else the session's "
                                                       "last, else the default.")


class ToolBuilderTurnStartedSerializer(serializers.Serializer):
    run_id = serializers.UUIDField()
    conversation_id = serializers.UUIDField()


# ------------------------------------------------------------------ database and MCP connections


class DatabaseConnectionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    engine = serializers.ChoiceField(choices=DatabaseConnection.Engine.values)
    permission = serializers.ChoiceField(choices=DatabaseConnection.Permission.values)
    statement_timeout_ms = serializers.IntegerField()
    row_cap = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class DatabaseConnectionListSerializer(serializers.Serializer):
    results = DatabaseConnectionSerializer(many=True)


class DatabaseConnectionCreateSerializer(serializers.Serializer):
    name = serializers.RegexField(r"^[a-z][a-z0-9_]{0,31}$")
    dsn = serializers.CharField(help_text="A PostgreSQL connection string; sealed in the vault, never shown "
                                          "again.")
    permission = serializers.ChoiceField(choices=DatabaseConnection.Permission.values, required=False,
                                         default="read")
    engine = serializers.ChoiceField(choices=DatabaseConnection.Engine.values, required=False,
                                     default="postgresql")


class DatabaseConnectionUpdateSerializer(serializers.Serializer):
    permission = serializers.ChoiceField(choices=DatabaseConnection.Permission.values, required=False)
    row_cap = serializers.IntegerField(required=False, help_text="Kept between 1 and 5,000.")
    statement_timeout_ms = serializers.IntegerField(required=False, help_text="Kept between 100 and 60,000.")
    dsn = serializers.CharField(required=False, help_text="A new connection string (checked with a real "
                                                          "connect).")


class McpToolSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()


class McpConnectionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    url = serializers.CharField()
    transport = serializers.ChoiceField(choices=McpConnection.Transport.choices)
    auth_header = serializers.CharField()
    auth_secret_id = serializers.UUIDField(allow_null=True)
    tools = McpToolSerializer(many=True, help_text="What the server listed at the last check.")
    checked_at = serializers.DateTimeField(allow_null=True)


class McpConnectionListSerializer(serializers.Serializer):
    results = McpConnectionSerializer(many=True)


class McpConnectionCreateSerializer(serializers.Serializer):
    name = serializers.RegexField(r"^[a-z][a-z0-9]{0,23}$", help_text="Its tools arrive as <name>_<tool>.")
    url = serializers.CharField(help_text="The server's http(s) URL.")
    transport = serializers.ChoiceField(choices=McpConnection.Transport.choices, required=False,
                                        default="streamable_http")
    auth_secret_id = serializers.UUIDField(required=False, allow_null=True)
    auth_header = serializers.CharField(required=False, allow_null=True, default="Authorization")
    auth_prefix = serializers.CharField(required=False, allow_null=True, allow_blank=True, default="Bearer ")


class McpCatalogEntrySerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    url = serializers.CharField()
    logo = serializers.CharField(help_text="Its path under the static URL.")
    auth = serializers.ChoiceField(choices=["person", "organization"],
                                   help_text="Whom it is connected for: each person, or the organization.")
    available = serializers.BooleanField()
    connection_id = serializers.UUIDField(allow_null=True)
    tools = serializers.IntegerField(help_text="How many tools it listed.")
    connected = serializers.BooleanField(help_text="Whether the caller's side of it is connected.")
    connected_at = serializers.DateTimeField(allow_null=True)
    can_connect = serializers.BooleanField()


class McpCatalogSerializer(serializers.Serializer):
    results = McpCatalogEntrySerializer(many=True)
