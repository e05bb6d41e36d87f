"""Channel bots: a bot account on Slack, Telegram or Mattermost, the one agent bound to it, the chat
accounts that talk to it, the thread → conversation sessions, and single-use link requests.

Credentials are sealed per organization with the vault's envelope (`BotCredential` carries the same four
fields as `agenticos.Secret`, so `vault_rewrap` finds and rotates it); nothing here ever returns them.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agenticos.models import Organization


class Platform(models.TextChoices):
    SLACK = "slack", "Slack"
    TELEGRAM = "telegram", "Telegram"
    MATTERMOST = "mattermost", "Mattermost"


class Transport(models.TextChoices):
    WEBHOOK = "webhook", "Webhook (the platform calls us)"
    # Telegram long polling, Slack Socket Mode, the Mattermost WebSocket event stream.
    POLLING = "polling", "Connection we keep open"


class ConnectionState(models.TextChoices):
    IDLE = "idle", "Not needed (webhook)"
    CONNECTING = "connecting", "Connecting"
    CONNECTED = "connected", "Connected"
    RETRYING = "retrying", "Dropped, retrying"
    NOT_STARTED = "not_started", "Not started"
    PAUSED = "paused", "Paused"


class AccessMode(models.TextChoices):
    OPEN = "open", "Anyone in a channel with the bot"
    WHITELIST = "whitelist", "Listed chat accounts only"
    GROUP_ONLY = "group_only", "Listed channels / groups only"
    JWT_LINKED = "jwt_linked", "Accounts linked to a member only"


def default_access_policy() -> dict:
    return {
        "mode": AccessMode.OPEN.value,
        "whitelist": [],
        "allowed_groups": [],
        "require_link": False,
        "rate_limit_rpm": 10,
        "denied_message": "",
    }


class ChannelBot(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="channel_bots")
    platform = models.CharField(max_length=16, choices=Platform.choices)
    name = models.CharField(max_length=120)
    # Required for Mattermost (self-hosted); an optional override for Slack / Telegram (proxy, local Bot API).
    api_base_url = models.CharField(max_length=300, blank=True)
    transport = models.CharField(max_length=16, choices=Transport.choices, default=Transport.WEBHOOK)
    access_policy = models.JSONField(default=default_access_policy, blank=True)
    # Speech-to-text model pair (provider, model); both empty = voice notes are not transcribed.
    stt_provider = models.CharField(max_length=32, blank=True)
    stt_model = models.CharField(max_length=120, blank=True)
    # Whose key pays for a voice note: one of the organization's model profiles serving that provider. Empty =
    # the organization's only such profile (a Speech-to-text one first); with several and none named, voice notes
    # are refused with a message saying to choose, never sent with an arbitrary key.
    stt_profile = models.ForeignKey("agents.ModelProfile", on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+")
    is_paused = models.BooleanField(default=False)
    connection_state = models.CharField(max_length=16, choices=ConnectionState.choices, default=ConnectionState.IDLE)
    connection_reason = models.CharField(max_length=300, blank=True)
    # The platform's id for the bot's own account (Slack U…, Telegram numeric id, Mattermost user id).
    platform_bot_user_id = models.CharField(max_length=64, blank=True)
    platform_bot_username = models.CharField(max_length=120, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(platform__in=["slack", "telegram", "mattermost"]), name="channelbot_platform_valid"
            ),
            models.CheckConstraint(condition=Q(transport__in=["webhook", "polling"]), name="channelbot_transport_valid"),
            models.CheckConstraint(
                condition=~Q(platform="mattermost") | ~Q(api_base_url=""), name="channelbot_mattermost_has_server"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.platform})"

    @property
    def policy(self) -> dict:
        return {**default_access_policy(), **(self.access_policy or {})}


class CredentialKind(models.TextChoices):
    TOKEN = "token", "Bot token"
    SIGNING_SECRET = "signing_secret", "Slack signing secret"
    APP_TOKEN = "app_token", "Slack app-level token (xapp-)"
    WEBHOOK_SECRET = "webhook_secret", "Webhook secret / token"


class BotCredential(models.Model):
    """One sealed credential of a bot. Same envelope fields as `agenticos.Secret` (vault_rewrap finds it)."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    bot = models.ForeignKey(ChannelBot, on_delete=models.CASCADE, related_name="credentials")
    kind = models.CharField(max_length=20, choices=CredentialKind.choices)
    key_version = models.PositiveIntegerField()
    wrapped_key = models.BinaryField()
    ciphertext = models.BinaryField()
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bot", "kind"], name="botcredential_unique_kind")]

    def __str__(self) -> str:
        return f"{self.kind} of {self.bot_id}"


class FooterMode(models.TextChoices):
    LOG_ONLY = "log_only", "Only recorded"
    NEAR_LIMIT = "near_limit", "Near a limit (budget or workspace)"
    EVERY_N = "every_n", "Every N replies"
    EVERY_REPLY = "every_reply", "Every reply"


class Binding(models.Model):
    """Exposure of one agent on one bot. A bot serves exactly one agent (unique in the database)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="channel_bindings")
    bot = models.OneToOneField(ChannelBot, on_delete=models.CASCADE, related_name="binding")
    environment = models.SlugField(max_length=40, default="production")
    extra_prompt = models.TextField(blank=True)
    # "" = the agent spec's default; else a workspace session scope for runs through this binding.
    workspace_scope = models.CharField(max_length=32, blank=True)
    # Channel lookup tool ids granted on this binding (channel_tools), e.g. ["get_channel_info"].
    channel_tools = models.JSONField(default=list, blank=True)
    # How many rows a channel lookup returns when the model names no limit (capability default_limit, 1–200).
    channel_tools_limit = models.PositiveSmallIntegerField(default=20)
    footer_mode = models.CharField(max_length=16, choices=FooterMode.choices, default=FooterMode.NEAR_LIMIT)
    footer_every_n = models.PositiveIntegerField(default=10)
    # near_limit speaks once the month's budget or the workspace passes this percentage (spec: 80% by default).
    footer_threshold_percent = models.PositiveSmallIntegerField(default=80)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.agent_id} on {self.bot_id}"


class ChannelIdentity(models.Model):
    """A platform account (Slack user, Telegram user, Mattermost user) that talked to a bot of this
    organization; `user` is the member it is linked to (None = unlinked). Disconnecting clears `user`."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    platform = models.CharField(max_length=16, choices=Platform.choices)
    # Slack: team id; Mattermost: server URL; Telegram: "" (global ids).
    workspace = models.CharField(max_length=300, blank=True)
    account_id = models.CharField(max_length=120)
    display_name = models.CharField(max_length=200, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="chat_accounts"
    )
    linked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["platform", "display_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "platform", "workspace", "account_id"], name="channelidentity_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.platform}:{self.display_name or self.account_id}"

    @property
    def label(self) -> str:
        return f"{self.platform}:{self.account_id}"


class ChannelSession(models.Model):
    """A bot + chat + thread → one conversation."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    bot = models.ForeignKey(ChannelBot, on_delete=models.CASCADE, related_name="sessions")
    chat_id = models.CharField(max_length=120)
    thread_key = models.CharField(max_length=120, blank=True)
    chat_type = models.CharField(max_length=16, default="channel")
    conversation = models.ForeignKey("agents.Conversation", on_delete=models.CASCADE, related_name="+")
    # Mid-thread join: the earlier messages were read once (never deduced from age).
    history_loaded = models.BooleanField(default=False)
    reply_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bot", "chat_id", "thread_key"], name="channelsession_unique_thread")
        ]

    def __str__(self) -> str:
        return f"{self.bot_id}:{self.chat_id}:{self.thread_key}"


class LinkRequest(models.Model):
    """A 15-minute, single-use token a DM hands out; opening it signed in links the chat account."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    identity = models.ForeignKey(ChannelIdentity, on_delete=models.CASCADE, related_name="link_requests")
    bot = models.ForeignKey(ChannelBot, on_delete=models.CASCADE, related_name="+")
    # sha256 of the token: the URL is a bearer credential, so the row does not hold it.
    token_hash = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    retired = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"link for {self.identity_id}"

    @property
    def usable(self) -> bool:
        return not self.retired and self.used_at is None and self.expires_at > timezone.now()


class ApprovalCard(models.Model):
    """The message in a thread that shows one parked call (tool and arguments) with Approve / Reject; once
    decided it says who decided and where. The click is checked against this row: a button only decides the
    approval of the very message it was posted on, in the chat it was posted in."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    approval = models.OneToOneField("governance.Approval", on_delete=models.CASCADE, related_name="channel_card")
    bot = models.ForeignKey(ChannelBot, on_delete=models.CASCADE, related_name="approval_cards")
    chat_id = models.CharField(max_length=120)
    # Where the card sits: the thread the question was asked in (Slack thread_ts, Mattermost root, Telegram reply).
    thread = models.CharField(max_length=120, blank=True)
    # The platform's reference to the card message (Slack ts, Telegram message_id, Mattermost post id).
    message_ref = models.CharField(max_length=120)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"card of {self.approval_id} in {self.chat_id}"


class PostedReply(models.Model):
    """A message a bot posted as a run's answer (each message of a long answer split in several): a 👍/👎 reaction
    on it is feedback on that run (channelbots/reactions.py). Goes with its run."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    bot = models.ForeignKey(ChannelBot, on_delete=models.CASCADE, related_name="posted_replies")
    chat_id = models.CharField(max_length=120)
    # The platform's reference to the message (Slack ts, Telegram message_id, Mattermost post id).
    message_ref = models.CharField(max_length=120)
    run = models.ForeignKey("agents.Run", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bot", "chat_id", "message_ref"], name="postedreply_unique_message")
        ]

    def __str__(self) -> str:
        return f"{self.message_ref} of run {self.run_id}"
