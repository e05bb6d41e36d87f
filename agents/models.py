"""Agents as data, their frozen versions and environments, model profiles, and the run ledger + transcript."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agenticos.models import Organization, Secret


class Provider(models.TextChoices):
    DEMO = "demo", "Offline demo model"
    OPENAI = "openai", "OpenAI"
    ANTHROPIC = "anthropic", "Anthropic"
    OPENROUTER = "openrouter", "OpenRouter"
    OLLAMA = "ollama", "Ollama"
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible server"


PROVIDERS_NEEDING_KEY = {Provider.OPENAI, Provider.ANTHROPIC, Provider.OPENROUTER}
PROVIDERS_NEEDING_BASE_URL = {Provider.OPENAI_COMPATIBLE}


class ModelProfile(models.Model):
    class Kind(models.TextChoices):
        CHAT = "chat", "Chat"
        EMBEDDING = "embedding", "Embedding"
        TRANSCRIPTION = "transcription", "Speech to text"
        # A speech-to-speech model a voice call talks to (OpenAI's Realtime API): calls/ reads it.
        REALTIME = "realtime", "Realtime voice"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="model_profiles")
    label = models.CharField(max_length=120)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CHAT)
    provider = models.CharField(max_length=32, choices=Provider.choices)
    model = models.CharField(max_length=200)
    secret = models.ForeignKey(Secret, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    base_url = models.URLField(max_length=500, blank=True)
    context_window = models.PositiveIntegerField(null=True, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    fallbacks = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["label"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "label"], name="modelprofile_unique_label_per_org"),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.provider}:{self.model})"


class Visibility(models.TextChoices):
    ORGANIZATION = "organization", "Everyone in the organization"
    PRIVATE = "private", "Owner and people it is shared with"


class Agent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="agents")
    slug = models.SlugField(max_length=80)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.ORGANIZATION)
    draft_spec = models.JSONField(default=dict)
    # The agent's picture (PNG/JPEG/WebP/GIF, sniffed), shown where people meet it (hosted pages).
    avatar_path = models.CharField(max_length=300, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "slug"], name="agent_unique_slug_per_org")]
        permissions = [
            ("use_agent", "Can use (run) agent"),
            ("edit_agent", "Can edit agent draft"),
            ("publish_agent", "Can publish agent"),
        ]
        default_permissions = ("view",)

    def __str__(self) -> str:
        return self.name


class AgentVersion(models.Model):
    """A frozen spec. Updating one is refused here and by a database trigger."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    note = models.CharField(max_length=500, blank=True)
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["agent", "-number"]
        # Number 0 is an evaluation snapshot of the draft (evals: a suite run on the draft runs one): never
        # published, never in an environment, never listed; any number of them, each frozen like a version.
        constraints = [models.UniqueConstraint(fields=["agent", "number"], condition=Q(number__gt=0),
                                               name="agentversion_unique_number")]

    def __str__(self) -> str:
        return f"{self.agent} v{self.number}" if self.number else f"{self.agent} (draft snapshot)"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError("Agent versions are immutable; publish a new version instead.")
        super().save(*args, **kwargs)


class Environment(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="environments")
    name = models.SlugField(max_length=40)
    version = models.ForeignKey(AgentVersion, on_delete=models.PROTECT, related_name="+")
    tracks_latest = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)
    # The rollout sharing this environment's traffic (active or paused), else None: admission reads it with the
    # environment's row it reads anyway, so an agent without a rollout pays no query for the feature
    # (agents.rollouts). Set and cleared only by agents.rollouts, in the transaction that changes the rollout.
    rollout = models.ForeignKey("Rollout", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["agent", "name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="environment_unique_name")]

    def __str__(self) -> str:
        return f"{self.agent}:{self.name} → v{self.version.number}"


class Rollout(models.Model):
    """A candidate version served to `share` % of an environment's new sticky keys (conversations, visitors,
    threads, triggers) while the base keeps the rest; watched against thresholds and rolled back by itself
    (agents.rollouts). At most one active or paused rollout per (agent, environment)."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        PROMOTED = "promoted", "Promoted"
        ROLLED_BACK = "rolled_back", "Rolled back"
        ABORTED = "aborted", "Aborted"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="rollouts")
    environment = models.SlugField(max_length=40)
    base = models.ForeignKey(AgentVersion, on_delete=models.PROTECT, related_name="+")
    candidate = models.ForeignKey(AgentVersion, on_delete=models.PROTECT, related_name="+")
    share = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    # Thresholds: the candidate is rolled back when, with at least `min_runs` ended runs, its failure rate is
    # `failure_multiple` × the base's (or more), or its cost per run is `cost_increase_pct` % above the base's.
    failure_multiple = models.DecimalField(max_digits=6, decimal_places=2, default=2)
    min_runs = models.PositiveIntegerField(default=20)
    cost_increase_pct = models.PositiveIntegerField(null=True, blank=True, default=50)
    # The same rule for the other watched shares (null: not watched): runs a guardrail blocked, runs where a
    # person rejected a tool call (of the ended runs), and 👎 (of the rated runs, at least `min_runs` of them).
    guardrail_multiple = models.DecimalField(max_digits=6, decimal_places=2, null=True, blank=True, default=2)
    rejection_multiple = models.DecimalField(max_digits=6, decimal_places=2, null=True, blank=True, default=2)
    thumbs_down_multiple = models.DecimalField(max_digits=6, decimal_places=2, null=True, blank=True, default=2)
    # Steps: the shares the rollout moves through after `share` (ascending; 100 promotes), by hand
    # (`advance_rollout`) or, with `step_minutes`, by the beat once the current share has held that long with
    # at least `min_runs` ended candidate runs and no threshold crossed.
    steps = models.JSONField(default=list, blank=True)
    step_minutes = models.PositiveIntegerField(null=True, blank=True)
    stepped_at = models.DateTimeField(default=timezone.now)
    reason = models.CharField(max_length=500, blank=True)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    started_at = models.DateTimeField(default=timezone.now)
    ended_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="+")
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "environment"], condition=Q(status__in=["active", "paused"]),
                                    name="rollout_one_open_per_environment"),
            models.CheckConstraint(condition=Q(share__lte=99), name="rollout_share_below_100"),
            models.CheckConstraint(condition=Q(status__in=["active", "paused", "promoted", "rolled_back", "aborted"]),
                                   name="rollout_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.agent}:{self.environment} v{self.base.number}→v{self.candidate.number} {self.share}%"

    @property
    def is_open(self) -> bool:
        return self.status in (self.Status.ACTIVE, self.Status.PAUSED)

    @property
    def next_step(self) -> int | None:
        return next((step for step in self.steps if step > self.share), None)


class Surface(models.TextChoices):
    WEB = "web", "Web chat"
    EMBED = "embed", "Embed"
    API = "api", "REST API"
    SLACK = "slack", "Slack"
    TELEGRAM = "telegram", "Telegram"
    MATTERMOST = "mattermost", "Mattermost"
    SCHEDULE = "schedule", "Schedule"
    EVENT = "event", "Event trigger"
    EVAL = "eval", "Evaluation"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    AWAITING_ANSWER = "awaiting_answer", "Awaiting answer"
    BUDGET_EXCEEDED = "budget_exceeded", "Budget exceeded"
    GUARDRAIL_BLOCKED = "guardrail_blocked", "Blocked by a guardrail"


TERMINAL_STATUSES = {
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.CANCELLED,
    RunStatus.BUDGET_EXCEEDED,
    RunStatus.GUARDRAIL_BLOCKED,
}


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="conversations")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conversations")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    surface = models.CharField(max_length=16, choices=Surface.choices, default=Surface.WEB)
    title = models.CharField(max_length=200, blank=True)
    # Surface-specific keys (embed visitor, channel thread…).
    external_key = models.CharField(max_length=200, blank=True, db_index=True)
    # The plan (planning capability) and other per-conversation state owned by capabilities.
    state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_active_at = models.DateTimeField(default=timezone.now, db_index=True)
    # Set when the owner pins it to the top of their chat list (newest pin first); None = not pinned.
    pinned_at = models.DateTimeField(null=True, blank=True)
    # Who wrote the title: "" its first message (agents.titles.conversation_title), "model" the title model after
    # the first exchange, "person" its owner — a person's title is never replaced.
    title_by = models.CharField(max_length=8, blank=True, default="", db_default="")
    # The owner's filing (agents.chat.archive_conversation, tag_conversation): archived leaves their chat list for
    # its Archived view; tags (short labels, lower-cased, at most TAGS_MAX) filter it.
    archived_at = models.DateTimeField(null=True, blank=True)
    tags = models.JSONField(default=list, blank=True, db_default=[])

    class Meta:
        ordering = ["-last_active_at"]
        indexes = [models.Index(fields=["organization", "owner", "-last_active_at"], name="conv_org_owner_active")]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"


class ChatSettings(models.Model):
    """An organization's choices for its chat: the model profile that titles conversations after their first
    exchange (agents.titles; none = no model titles, the first message's words stay) and the one that transcribes
    the microphone."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, primary_key=True,
                                        related_name="chat_settings")
    title_profile = models.ForeignKey(ModelProfile, on_delete=models.SET_NULL, null=True, blank=True,
                                      related_name="+")
    # The speech-to-text profile that transcribes the web chat's microphone (media.transcription.chat_profile;
    # none = the organization's only speech-to-text profile, if it has exactly one).
    voice_profile = models.ForeignKey(ModelProfile, on_delete=models.SET_NULL, null=True, blank=True,
                                      related_name="+")
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"Chat settings of {self.organization_id}"


class ConversationShare(models.Model):
    """A read-only link to a conversation (agents.sharing): anyone with the link reads the branch on screen, as
    text — no tool steps, no files. Its owner revokes it (the link then answers 404, and a new one is a new token)."""

    id = models.BigAutoField(primary_key=True)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="shares")
    token = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["conversation"], condition=Q(revoked_at__isnull=True),
                                               name="conversationshare_one_open")]

    def __str__(self) -> str:
        return f"Share of {self.conversation_id}"


class Run(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="runs")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    version = models.ForeignKey(AgentVersion, on_delete=models.PROTECT, related_name="runs")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, null=True, blank=True, related_name="runs")
    surface = models.CharField(max_length=16, choices=Surface.choices)
    # Whose authority the run has (None = anonymous visitor with the publisher's authority in `acting_as`).
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    acting_role = models.CharField(max_length=16, blank=True)
    api_key = models.ForeignKey("agenticos.ApiKey", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    embed_id = models.UUIDField(null=True, blank=True)
    chat_account = models.CharField(max_length=200, blank=True)
    prompt = models.TextField(blank=True)
    status = models.CharField(max_length=24, choices=RunStatus.choices, default=RunStatus.QUEUED)
    output = models.TextField(blank=True)
    error = models.JSONField(default=dict, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    cost_is_partial = models.BooleanField(default=False)
    # How full the model's context window was at the run's last request: the input tokens the provider billed
    # for it (instructions and tool schemas included) against the window the run measured it by — the
    # compaction binding's `context_window`, else the model profile's, else the model's own (genai-prices).
    # Null when the run made no request or no window is known. Every agent reports it, compacting or not.
    context_tokens = models.PositiveIntegerField(null=True, blank=True)
    context_window = models.PositiveIntegerField(null=True, blank=True)
    # pydantic-ai message history at the point the run parked (approval / question), to resume from.
    parked_state = models.JSONField(null=True, blank=True)
    # What a running run needs to go on from its last step on another worker (agents/runner/checkpoint.py):
    # the pydantic-ai messages through the last model response that called tools, the transcript's parts, the
    # pending calls with whether each is read-only, the step count. Written with that response's spend.
    checkpoint = models.JSONField(null=True, blank=True)
    # What happened to the run besides its steps: [{type: run_interrupted | run_resumed, at, …}] (shown on the
    # run's page): a lost worker, who took the run on and how long it waited.
    events = models.JSONField(default=list, blank=True)
    # The process executing the run ("host:pid", set when it takes the run): its pulse beats only the rows it
    # still holds, so a worker that stalled past the stale limit learns another took its run over and stops.
    worker = models.CharField(max_length=200, blank=True, default="", db_default="")
    cancel_requested = models.BooleanField(default=False)
    # How the surface asked for the run: history window, extra instructions (placement note, visitor
    # variables, channel prompt), whether someone can answer ask_user, the embed's frame filter, etc.
    options = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # The OpenTelemetry trace of the run's first execution, 32 hex digits ("" when tracing was off): how an
    # operator finds the run in Jaeger / Tempo (agenticos/telemetry.py).
    trace_id = models.CharField(max_length=32, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="run_org_time"),
            models.Index(fields=["agent", "created_at"], name="run_agent_time"),
            models.Index(fields=["status", "heartbeat_at"], name="run_status_heartbeat"),
        ]
        constraints = [models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="run_status_valid")]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def public_error(self) -> dict:
        """`error` without the operator's hint (the deployment setting a refused model address needs, see
        `netguard.AddressRefused.hint`): what the API and every member see. The console's run page shows the
        hint to who may read it (`agenticos.tenancy.sees_deployment_settings`)."""
        def strip(error: dict) -> dict:
            kept = {k: v for k, v in error.items() if k != "hint"}
            if isinstance(kept.get("attempts"), list):
                kept["attempts"] = [strip(a) if isinstance(a, dict) else a for a in kept["attempts"]]
            return kept

        return strip(self.error) if isinstance(self.error, dict) else self.error

    @property
    def is_draft(self) -> bool:
        """A run of the draft (the Builder's test chat, agents.drafts): on no published version's ledger."""
        return bool((self.options or {}).get("draft"))

    @property
    def is_voice_call(self) -> bool:
        """A live voice call's run (calls.service.start_call_run): its turns are the call's transcripts, its tool
        calls those the call ran, its spend the realtime model's audio; it is never queued nor resumed."""
        return bool((self.options or {}).get("voice_call"))

    def get_surface_display(self) -> str:  # type: ignore[no-redef]  # overrides the choices display on purpose
        # Every list that names a run's surface (Activity, run detail, the admin) says a draft run is one, and a
        # voice call's run is one.
        label = str(dict(Surface.choices).get(self.surface, self.surface))
        if self.is_voice_call:
            label = f"{label} (voice call)"
        return f"{label} (draft)" if self.is_draft else label


class NewestFirst(models.Func):
    """`-id`: the key the newest messages of a branch are read by (agents.runner.history, agents.branches.leaf).

    Ordering by `id DESC` let PostgreSQL walk the primary key backwards and filter on the conversation: it assumes
    a conversation's rows are spread evenly over all ids, while they sit together, so a turn in a long
    conversation that others wrote after scanned every newer message of every conversation (EXPLAIN ANALYZE: 131k
    rows removed by the filter, 40 ms for the history, 70 ms for the parent's id). No other index gives this
    expression's order, so the plan is the index `message_branch_newest` (or a sort of a small conversation)."""

    template = "(-%(expressions)s)"
    arity = 1
    output_field = models.BigIntegerField()


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        SYSTEM = "system", "System"

    id = models.BigAutoField(primary_key=True)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="messages")
    version = models.ForeignKey(AgentVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    role = models.CharField(max_length=16, choices=Role.choices)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    author_label = models.CharField(max_length=200, blank=True)
    # The chat account that wrote a channel turn (linked or not): the author for search and the console when no
    # member wrote it, and the one who becomes its person once the account is linked.
    chat_identity = models.ForeignKey("channelbots.ChannelIdentity", on_delete=models.SET_NULL, null=True, blank=True,
                                      related_name="messages")
    content = models.TextField(blank=True)
    thinking = models.TextField(blank=True)
    # [{type: text|thinking, text} | {type: tool, tool_call_id}] in streamed order.
    parts = models.JSONField(default=list, blank=True)
    attachments = models.JSONField(default=list, blank=True)
    search_vector = SearchVectorField(null=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    # The conversation is a tree (agents.branches): a message follows its parent; a regenerated answer or an
    # edited message is a sibling of the one it replaces. `on_branch` marks the branch on screen — one path from
    # a root — which is what the chat shows and the next turn's history reads (ids grow along a path, so the
    # branch in id order is the path in order).
    parent = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    on_branch = models.BooleanField(default=True, db_default=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["conversation", "-id"], name="message_conv_newest"),
            # The branch on screen, newest first (NewestFirst says why it is an expression).
            models.Index(models.F("conversation"), NewestFirst("id"), condition=Q(on_branch=True),
                         name="message_branch_newest"),
            GinIndex(fields=["search_vector"], name="message_search_gin"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class Feedback(models.Model):
    """A person's 👍/👎 (and optional comment) on one answer, stored per run and message (agents.feedback):
    shown in Activity, and a 👎 becomes an evaluation case in one click (`eval_case_id` is the case it became).

    A member's has `user`. Someone without an account — an embed's visitor, a chat account reacting in Slack,
    Telegram or Mattermost — has none: `rater` names them within the message's conversation (one rating each, as a
    member has), `rater_label` is what Activity shows, and `source` says where the rating was given."""

    class Rating(models.TextChoices):
        UP = "up", "Helpful"
        DOWN = "down", "Not helpful"

    class Source(models.TextChoices):
        WEB = "web", "Web chat"
        EMBED = "embed", "Widget or hosted page"
        SLACK = "slack", "Slack reaction"
        TELEGRAM = "telegram", "Telegram reaction"
        MATTERMOST = "mattermost", "Mattermost reaction"

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="feedback")
    run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True,
                             related_name="+")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.WEB)
    # Who rated when no member did (never a credential: an embed visitor's is "visitor", the conversation being
    # theirs alone; a chat account's is "<platform>:<account id>").
    rater = models.CharField(max_length=160, blank=True)
    rater_label = models.CharField(max_length=200, blank=True)
    rating = models.CharField(max_length=8, choices=Rating.choices)
    comment = models.TextField(blank=True, max_length=2000)
    eval_case_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["organization", "-updated_at"], name="feedback_org_time")]
        constraints = [
            models.UniqueConstraint(fields=["message", "user"], name="feedback_one_per_person"),
            models.UniqueConstraint(fields=["message", "rater"], condition=Q(user__isnull=True),
                                    name="feedback_one_per_outside_rater"),
            models.CheckConstraint(condition=Q(user__isnull=False) | ~Q(rater=""), name="feedback_has_a_rater"),
            models.CheckConstraint(condition=Q(rating__in=["up", "down"]), name="feedback_rating_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.rating} on message {self.message_id}"

    @property
    def rated_by(self) -> str:
        """Who gave it, as Activity names them."""
        return str(self.user) if self.user_id else (self.rater_label or self.rater)


class ToolCall(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        OK = "ok", "OK"
        ERROR = "error", "Error"
        PARKED = "parked", "Parked"
        UNFINISHED = "unfinished", "Unfinished"

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    message = models.ForeignKey(Message, on_delete=models.SET_NULL, null=True, blank=True, related_name="tool_calls")
    tool_call_id = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=200)
    capability_id = models.CharField(max_length=80, blank=True)
    args = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["run", "tool_call_id"], name="toolcall_unique_per_run")]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"


class CompactedHistory(models.Model):
    """The one message history a conversation keeps across turns (capabilities/compaction/persisted.py).

    Ordinarily the next turn's history is rebuilt from the transcript's text. A run whose history was actually
    compacted is the exception: pydantic-ai's own dump of its messages (ModelMessagesTypeAdapter JSON, base64
    included, as the model last saw them) is kept here, and the next turns replay it followed by the transcript
    messages after `through_message_id` as text, until the next compaction replaces it. With `media` the large
    parts are behind media+sha256:// references in the organization's store (capabilities/media); the row goes
    with its conversation."""

    conversation = models.OneToOneField(Conversation, on_delete=models.CASCADE, primary_key=True,
                                        related_name="compacted_history")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    # The run that compacted (and wrote) it.
    run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    messages = models.JSONField(default=list)
    # The media walker wrote `messages` (its references are read back by that walker only).
    media = models.BooleanField(default=False)
    # The newest transcript message the dump covers: later ones are replayed after it as text.
    through_message_id = models.BigIntegerField()
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"Compacted history of {self.conversation_id}"
