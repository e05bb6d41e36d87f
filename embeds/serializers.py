"""What the embeds management API accepts and answers, for the OpenAPI schema. embeds.api.serialize builds the
JSON by hand and embeds.services validates the input: these serializers describe both, they do not check them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from embeds.models import Embed
from embeds.services import ACCENT_RE, VARIABLE_NAME_RE

PAGE_ONLY = "Hosted page only (sent for another kind: 422)."


class EmbedVariableSerializer(serializers.Serializer):
    name = serializers.RegexField(VARIABLE_NAME_RE.pattern, max_length=40,
                                  help_text="Letters, digits and underscores.")
    required = serializers.BooleanField(required=False, default=False)
    description = serializers.CharField(required=False, allow_blank=True, max_length=300)
    url_safe = serializers.BooleanField(required=False, default=False)


class EmbedSerializer(serializers.Serializer):
    """An embed as embeds.api.serialize answers it. The page-only settings and the kind-specific addresses are
    present only for that kind, so they are not required."""

    id = serializers.UUIDField()
    agent_id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=Embed.Kind.choices)
    name = serializers.CharField(allow_blank=True)
    environment = serializers.CharField()
    public_key = serializers.CharField()
    auth_mode = serializers.ChoiceField(choices=Embed.AuthMode.choices)
    jwt_secret_set = serializers.BooleanField(help_text="Whether a jwt signing secret is stored (never which).")
    allowed_origins = serializers.ListField(child=serializers.CharField())
    title = serializers.CharField(allow_blank=True)
    subtitle = serializers.CharField(allow_blank=True)
    greeting = serializers.CharField(allow_blank=True)
    empty_text = serializers.CharField(allow_blank=True)
    launcher_text = serializers.CharField(allow_blank=True)
    accent_color = serializers.CharField()
    corner = serializers.ChoiceField(choices=Embed.Corner.choices)
    context_note = serializers.CharField(allow_blank=True)
    variables = EmbedVariableSerializer(many=True)
    rate_limit_per_minute = serializers.IntegerField()
    monthly_budget_usd = serializers.CharField(allow_null=True, help_text="A decimal amount; null: none of its own.")
    is_paused = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    welcome = serializers.CharField(required=False, allow_blank=True, help_text="Hosted page only.")
    logo_source = serializers.ChoiceField(choices=Embed.Logo.choices, required=False, help_text="Hosted page only.")
    has_uploaded_logo = serializers.BooleanField(required=False, help_text="Hosted page only.")
    show_tool_steps = serializers.BooleanField(required=False, help_text="Hosted page only.")
    show_tool_results = serializers.BooleanField(required=False, help_text="Hosted page only.")
    show_thinking = serializers.BooleanField(required=False, help_text="Hosted page only.")
    allow_new_thread = serializers.BooleanField(required=False, help_text="Hosted page only.")
    allow_microphone = serializers.BooleanField(required=False, help_text="Hosted page only.")
    allow_uploads = serializers.BooleanField(required=False, help_text="Hosted page only.")
    page_url = serializers.CharField(required=False, help_text="Hosted page only.")
    socket_url = serializers.CharField(required=False, help_text="Widget and socket only.")
    snippet = serializers.CharField(required=False, help_text="Widget only: the tag to paste.")
    script_url = serializers.CharField(required=False, help_text="Widget only.")


# Named "Embed" so its request components are EmbedRequest / PatchedEmbedRequest: the enum hook then counts the
# request and the answer as one component, and the kind / auth_mode / corner / logo_source choice sets do not
# collide with the schema's other enums of the same field names. It never appears in a response, so it does not
# clash with EmbedSerializer's "Embed".
@extend_schema_serializer(component_name="Embed")
class EmbedWriteSerializer(serializers.Serializer):
    """The body of POST (create; kind required) and PATCH (any subset; kind cannot change)."""

    kind = serializers.ChoiceField(choices=Embed.Kind.choices, help_text="Fixed at creation.")
    name = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=120)
    environment = serializers.CharField(required=False, max_length=40,
                                        help_text="The agent's environment it serves (production by default).")
    auth_mode = serializers.ChoiceField(choices=Embed.AuthMode.choices, required=False)
    jwt_secret = serializers.CharField(required=False, min_length=32,
                                       help_text="HS256 signing secret for jwt mode; kept in the vault, never "
                                                 "answered.")
    allowed_origins = serializers.ListField(child=serializers.CharField(), required=False,
                                            help_text="Exact origins (https://shop.example.com); none for a page.")
    title = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=120)
    subtitle = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=200)
    greeting = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    empty_text = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=200)
    launcher_text = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=60)
    accent_color = serializers.RegexField(ACCENT_RE.pattern, required=False, help_text="Like #4f46e5.")
    corner = serializers.ChoiceField(choices=Embed.Corner.choices, required=False)
    context_note = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    variables = EmbedVariableSerializer(many=True, required=False)
    rate_limit_per_minute = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1000)
    # The services take a JSON number or its text.
    monthly_budget_usd = serializers.CharField(required=False, allow_null=True,
                                               help_text="A decimal amount; null for none of its own.")
    welcome = serializers.CharField(required=False, allow_blank=True, allow_null=True, help_text=PAGE_ONLY)
    logo_source = serializers.ChoiceField(choices=Embed.Logo.choices, required=False, help_text=PAGE_ONLY)
    show_tool_steps = serializers.BooleanField(required=False, help_text=PAGE_ONLY)
    show_tool_results = serializers.BooleanField(required=False, help_text=PAGE_ONLY)
    show_thinking = serializers.BooleanField(required=False, help_text=PAGE_ONLY)
    allow_new_thread = serializers.BooleanField(required=False, help_text=PAGE_ONLY)
    allow_microphone = serializers.BooleanField(required=False, help_text=PAGE_ONLY)
    allow_uploads = serializers.BooleanField(required=False, help_text=PAGE_ONLY)


class EmbedListSerializer(serializers.Serializer):
    results = EmbedSerializer(many=True)
