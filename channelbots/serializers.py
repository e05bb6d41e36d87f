"""The JSON of channelbots/api.py, described for /api/schema/. The views build their answers by hand
(serialize_bot, serialize_binding, serialize_identity) and channelbots.services validates what comes in, so these
serializers only document: each one says exactly which keys the view writes or the service reads, and nothing
here validates a request (that would be a second set of rules to keep in step with the services).

Answers and request bodies are separate serializers because an answer's optional key (`warning`) cannot be said
with read-only fields: drf-spectacular marks every read-only field required."""

from __future__ import annotations

from rest_framework import serializers

from channelbots.models import AccessMode, ConnectionState, FooterMode, Platform, Transport
from channelbots.services import (
    CHANNEL_TOOL_IDS,
    CHANNEL_TOOLS_MAX_LIMIT,
    STT_CATALOG,
    WORKSPACE_SCOPES,
)

STT_PROVIDERS = sorted(STT_CATALOG)


class ChannelAccessPolicySerializer(serializers.Serializer):
    """Who may talk to the agent through the bot. In a request every key is optional: the keys sent are merged
    over the bot's current policy (over the defaults on create); an unknown key is refused."""

    mode = serializers.ChoiceField(choices=AccessMode.choices, required=False)
    whitelist = serializers.ListField(child=serializers.CharField(), required=False,
                                      help_text="Chat account ids allowed in `whitelist` mode.")
    allowed_groups = serializers.ListField(child=serializers.CharField(), required=False,
                                           help_text="Channel / group ids allowed in `group_only` mode.")
    require_link = serializers.BooleanField(required=False,
                                            help_text="Only chat accounts linked to a member may talk.")
    rate_limit_rpm = serializers.IntegerField(min_value=1, max_value=600, required=False,
                                              help_text="Messages per minute per chat account.")
    denied_message = serializers.CharField(allow_blank=True, required=False,
                                           help_text="What a refused person is told (cut at 500 characters).")


class ChannelBotSerializer(serializers.Serializer):
    """A channel bot as the API answers it. Credentials never appear: only whether each one is stored."""

    id = serializers.UUIDField()
    platform = serializers.ChoiceField(choices=Platform.choices)
    name = serializers.CharField()
    api_base_url = serializers.CharField(allow_blank=True,
                                         help_text="The server address (Mattermost, or a self-hosted API); empty: "
                                                   "the platform's own.")
    transport = serializers.ChoiceField(choices=Transport.choices)
    access_policy = ChannelAccessPolicySerializer()
    stt_provider = serializers.ChoiceField(choices=STT_PROVIDERS, allow_null=True,
                                           help_text="Speech-to-text for voice messages; null: none.")
    stt_model = serializers.CharField(allow_null=True)
    stt_profile_id = serializers.UUIDField(allow_null=True,
                                           help_text="The model profile whose key pays for speech-to-text.")
    is_paused = serializers.BooleanField()
    connection_state = serializers.ChoiceField(choices=ConnectionState.choices)
    connection_reason = serializers.CharField(allow_blank=True)
    token_set = serializers.BooleanField()
    signing_secret_set = serializers.BooleanField()
    app_token_set = serializers.BooleanField()
    webhook_secret_set = serializers.BooleanField()
    agent_id = serializers.UUIDField(allow_null=True, help_text="The agent the bot answers as; null: unbound.")
    webhook_url = serializers.CharField(help_text="The URL to give the platform for its events.")
    interactions_url = serializers.CharField(allow_null=True,
                                             help_text="Slack: the Interactivity Request URL; null elsewhere.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    warning = serializers.CharField(required=False,
                                    help_text="Present when the bot cannot work as set up (a missing secret).")


class ChannelBotListSerializer(serializers.Serializer):
    results = ChannelBotSerializer(many=True)


class ChannelBotWriteSerializer(serializers.Serializer):
    """A bot to create (POST) or the fields to change (PATCH: only the keys sent change). `platform` and
    `transport` are fixed after creation: a PATCH may repeat them but not change them. A credential left empty
    or out keeps the stored one."""

    platform = serializers.ChoiceField(choices=Platform.choices)
    name = serializers.CharField()
    transport = serializers.ChoiceField(choices=Transport.choices, required=False,
                                        help_text="Default `webhook`.")
    api_base_url = serializers.CharField(allow_blank=True, required=False,
                                         help_text="http(s)://host[:port]; required for Mattermost.")
    access_policy = ChannelAccessPolicySerializer(required=False)
    stt_provider = serializers.ChoiceField(choices=STT_PROVIDERS, allow_blank=True, allow_null=True, required=False)
    stt_model = serializers.CharField(allow_blank=True, allow_null=True, required=False,
                                      help_text="One of the provider's models.")
    stt_profile_id = serializers.UUIDField(allow_null=True, required=False,
                                           help_text="A model profile of this organization with the provider's key.")
    token = serializers.CharField(help_text="The bot token (at least 8 characters).")
    signing_secret = serializers.CharField(allow_blank=True, required=False, help_text="Slack only.")
    app_token = serializers.CharField(allow_blank=True, required=False, help_text="Slack Socket Mode only.")
    webhook_secret = serializers.CharField(allow_blank=True, required=False, help_text="Mattermost only.")


class ChannelBindingSerializer(serializers.Serializer):
    """The exposure of one agent on one bot."""

    id = serializers.UUIDField()
    agent_id = serializers.UUIDField()
    bot_id = serializers.UUIDField()
    platform = serializers.ChoiceField(choices=Platform.choices)
    environment = serializers.CharField()
    extra_prompt = serializers.CharField(allow_blank=True)
    workspace_scope = serializers.ChoiceField(choices=WORKSPACE_SCOPES, allow_null=True,
                                              help_text="Who shares a workspace; null: as the agent spec says.")
    channel_tools = serializers.ListField(child=serializers.ChoiceField(choices=CHANNEL_TOOL_IDS))
    channel_tools_limit = serializers.IntegerField()
    footer_mode = serializers.ChoiceField(choices=FooterMode.choices)
    footer_every_n = serializers.IntegerField()
    footer_threshold_percent = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class ChannelBindingListSerializer(serializers.Serializer):
    results = ChannelBindingSerializer(many=True)


class ChannelBindingUpdateSerializer(serializers.Serializer):
    """The binding's settings; only the keys sent change."""

    environment = serializers.CharField(allow_blank=True, allow_null=True, required=False,
                                        help_text="A published environment of the agent; empty: `production`.")
    extra_prompt = serializers.CharField(allow_blank=True, allow_null=True, required=False,
                                         help_text="Added to the agent's instructions (cut at 8000 characters).")
    workspace_scope = serializers.ChoiceField(choices=WORKSPACE_SCOPES, allow_blank=True, allow_null=True,
                                              required=False, help_text="Empty: as the agent spec says.")
    channel_tools = serializers.ListField(child=serializers.ChoiceField(choices=CHANNEL_TOOL_IDS), allow_null=True,
                                          required=False,
                                          help_text="Telegram bots offer get_channel_info and list_channel_members "
                                                    "only.")
    channel_tools_limit = serializers.IntegerField(min_value=1, max_value=CHANNEL_TOOLS_MAX_LIMIT, required=False)
    footer_mode = serializers.ChoiceField(choices=FooterMode.choices, required=False)
    footer_every_n = serializers.IntegerField(min_value=1, max_value=1000, required=False)
    footer_threshold_percent = serializers.IntegerField(min_value=1, max_value=100, required=False)


class ChannelBindingCreateSerializer(ChannelBindingUpdateSerializer):
    """A binding to create: the bot, then its settings (each optional)."""

    bot_id = serializers.UUIDField(help_text="A bot of this organization that answers as no agent yet.")


class ChatAccountSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    platform = serializers.ChoiceField(choices=Platform.choices)
    workspace = serializers.CharField(allow_blank=True,
                                      help_text="Slack: team id; Mattermost: server URL; Telegram: empty.")
    account_id = serializers.CharField()
    display_name = serializers.CharField(allow_blank=True)
    linked_at = serializers.DateTimeField(allow_null=True)


class ChatAccountListSerializer(serializers.Serializer):
    results = ChatAccountSerializer(many=True)


class ChatLinkSerializer(serializers.Serializer):
    chat_account = ChatAccountSerializer(help_text="The chat account the link would link to you.")
    bot = serializers.CharField(help_text="The name of the bot that sent the link.")
    confirm = serializers.CharField(help_text="What to do next (POST the same URL).")


class ChatLinkConfirmedSerializer(serializers.Serializer):
    chat_account = ChatAccountSerializer()
    linked = serializers.BooleanField()
