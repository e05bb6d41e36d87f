"""Operator console for agents: model profiles, agents, versions (read-only), environments,
conversations, the run ledger with this month's spend per surface, and the transcript (read-only)."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.contrib import admin
from django.db.models import Count, QuerySet, Sum
from django.http import HttpRequest
from django.utils.text import Truncator

from agenticos.admin import (
    AuditedAdmin,
    ReadOnlyAdmin,
    UUIDSearchMixin,
    admin_link,
    changelist_link,
    month_start,
)
from agents.models import (
    PROVIDERS_NEEDING_BASE_URL,
    PROVIDERS_NEEDING_KEY,
    Agent,
    AgentVersion,
    ChatSettings,
    CompactedHistory,
    Conversation,
    ConversationShare,
    Environment,
    Feedback,
    Message,
    ModelProfile,
    Rollout,
    Run,
    Surface,
    ToolCall,
)


def _short(value: object, length: int = 80) -> str:
    return Truncator(str(value or "")).chars(length)


# ------------------------------------------------------------------ model profiles


class ModelProfileForm(forms.ModelForm):
    base_url = forms.URLField(max_length=500, required=False, assume_scheme="https")
    class Meta:
        model = ModelProfile
        fields = (
            "organization", "label", "kind", "provider", "model", "secret", "base_url",
            "context_window", "settings", "fallbacks",
        )

    def clean(self):
        cleaned = super().clean()
        organization = cleaned.get("organization") or getattr(self.instance, "organization", None)
        secret = cleaned.get("secret")
        provider = cleaned.get("provider")
        # A profile may only use its own organization's secrets and fallbacks (the vault would refuse anyway).
        if organization is not None and secret is not None and secret.organization_id != organization.pk:
            self.add_error("secret", "This secret belongs to another organization.")
        fallbacks = cleaned.get("fallbacks") or []
        if organization is not None and any(fb.organization_id != organization.pk for fb in fallbacks):
            self.add_error("fallbacks", "Fallback profiles must belong to the same organization.")
        if provider in PROVIDERS_NEEDING_KEY and secret is None:
            self.add_error("secret", "This provider needs an API key from the vault.")
        if provider in PROVIDERS_NEEDING_BASE_URL and not cleaned.get("base_url"):
            self.add_error("base_url", "An OpenAI-compatible server needs its base URL.")
        return cleaned


@admin.register(ModelProfile)
class ModelProfileAdmin(AuditedAdmin):
    form = ModelProfileForm
    list_display = ("label", "organization_link", "kind", "provider", "model", "secret_link", "base_url", "context_window")
    list_filter = ("kind", "provider", "organization")
    search_fields = ("label", "model", "base_url", "organization__name")
    list_select_related = ("organization", "secret")
    autocomplete_fields = ("organization", "secret", "fallbacks")
    readonly_fields = ("id", "created_at")

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: ModelProfile) -> str:
        return admin_link(obj.organization)

    @admin.display(description="secret")
    def secret_link(self, obj: ModelProfile) -> str:
        # str(Secret) is its name and at most a 4-character hint, never the value.
        return admin_link(obj.secret)


# ------------------------------------------------------------------ agents, versions, environments


class EnvironmentInline(admin.TabularInline):
    model = Environment
    extra = 0
    fields = ("name", "version", "tracks_latest", "updated_at")
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("version__agent")


class VersionInline(admin.TabularInline):
    model = AgentVersion
    extra = 0
    fields = ("number", "note", "published_by", "created_at")
    readonly_fields = fields
    can_delete = False
    show_change_link = True
    ordering = ("-number",)

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("published_by")


@admin.register(Agent)
class AgentAdmin(AuditedAdmin):
    list_display = ("name", "slug", "organization_link", "owner_link", "visibility", "versions_count", "runs_link", "updated_at")
    list_filter = ("visibility", "organization")
    search_fields = ("name", "slug", "organization__name", "owner__email")
    list_select_related = ("organization", "owner")
    autocomplete_fields = ("organization", "owner")
    readonly_fields = ("id", "created_at", "updated_at")
    inlines = [EnvironmentInline, VersionInline]

    def get_queryset(self, request) -> QuerySet[Agent]:
        return super().get_queryset(request).annotate(_versions=Count("versions", distinct=True))

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Agent) -> str:
        return admin_link(obj.organization)

    @admin.display(description="owner", ordering="owner__email")
    def owner_link(self, obj: Agent) -> str:
        return admin_link(obj.owner)

    @admin.display(description="versions", ordering="_versions")
    def versions_count(self, obj: Agent) -> str:
        return changelist_link(AgentVersion, obj._versions, agent__id__exact=obj.pk)  # type: ignore[attr-defined]

    @admin.display(description="runs")
    def runs_link(self, obj: Agent) -> str:
        return changelist_link(Run, "runs", agent__id__exact=obj.pk)


@admin.register(AgentVersion)
class AgentVersionAdmin(ReadOnlyAdmin):
    """Versions are frozen (the model and a database trigger refuse updates); the console only reads them."""

    list_display = ("__str__", "agent_link", "organization_link", "number", "published_by_link", "note_short", "created_at")
    list_filter = ("agent__organization",)
    search_fields = ("agent__name", "agent__slug", "note")
    list_select_related = ("agent__organization", "published_by")
    fields = ("id", "agent", "number", "note", "published_by", "created_at", "spec")

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: AgentVersion) -> str:
        return admin_link(obj.agent)

    @admin.display(description="organization")
    def organization_link(self, obj: AgentVersion) -> str:
        return admin_link(obj.agent.organization)

    @admin.display(description="published by")
    def published_by_link(self, obj: AgentVersion) -> str:
        return admin_link(obj.published_by)

    @admin.display(description="note")
    def note_short(self, obj: AgentVersion) -> str:
        return _short(obj.note, 60)


class EnvironmentForm(forms.ModelForm):
    class Meta:
        model = Environment
        fields = ("agent", "name", "version", "tracks_latest", "updated_at")

    def clean(self):
        cleaned = super().clean()
        agent, version = cleaned.get("agent"), cleaned.get("version")
        if agent is not None and version is not None and version.agent_id != agent.pk:
            self.add_error("version", "This version belongs to another agent.")
        return cleaned


@admin.register(Environment)
class EnvironmentAdmin(AuditedAdmin):
    form = EnvironmentForm
    list_display = ("__str__", "agent_link", "name", "version_link", "tracks_latest", "updated_at")
    list_filter = ("name", "tracks_latest", "agent__organization")
    search_fields = ("agent__name", "agent__slug", "name")
    list_select_related = ("agent", "version__agent")
    autocomplete_fields = ("agent", "version")

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: Environment) -> str:
        return admin_link(obj.agent)

    @admin.display(description="version")
    def version_link(self, obj: Environment) -> str:
        return admin_link(obj.version, f"v{obj.version.number}")


@admin.register(Rollout)
class RolloutAdmin(ReadOnlyAdmin):
    """Rollouts are changed through their API (agents.rollouts keeps Environment.rollout in step); here they are read."""

    list_display = ("__str__", "agent_link", "environment", "share", "status", "started_at", "ended_at")
    list_filter = ("status", "organization")
    search_fields = ("agent__name", "agent__slug", "environment", "reason")
    list_select_related = ("agent", "base", "candidate")

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: Rollout) -> str:
        return admin_link(obj.agent)


# ------------------------------------------------------------------ conversations, runs, transcript


@admin.register(Conversation)
class ConversationAdmin(AuditedAdmin):
    list_display = ("__str__", "organization_link", "agent_link", "owner_link", "surface", "runs_link", "last_active_at")
    list_filter = ("surface", "organization")
    search_fields = ("title", "external_key", "agent__name", "owner__email")
    list_select_related = ("organization", "agent", "owner")
    autocomplete_fields = ("organization", "agent", "owner")
    readonly_fields = ("id", "created_at", "last_active_at", "messages_link")
    date_hierarchy = "last_active_at"

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Conversation) -> str:
        return admin_link(obj.organization)

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: Conversation) -> str:
        return admin_link(obj.agent)

    @admin.display(description="owner", ordering="owner__email")
    def owner_link(self, obj: Conversation) -> str:
        return admin_link(obj.owner)

    @admin.display(description="runs")
    def runs_link(self, obj: Conversation) -> str:
        return changelist_link(Run, "runs", conversation__id__exact=obj.pk)

    @admin.display(description="transcript")
    def messages_link(self, obj: Conversation) -> str:
        if obj.pk is None:
            return "–"
        return changelist_link(Message, "messages", conversation__id__exact=obj.pk)


class ToolCallInline(admin.TabularInline):
    model = ToolCall
    extra = 0
    fields = ("tool_name", "capability_id", "status", "started_at", "finished_at")
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(UUIDSearchMixin, ReadOnlyAdmin):
    """The run ledger. Runs change through the runner only; the console reads and filters them."""

    change_list_template = "admin/agents/run/change_list.html"
    list_display = (
        "short_id", "created_at", "organization_link", "agent_link", "version_link", "conversation_link",
        "surface", "status", "input_tokens", "output_tokens", "cost_usd", "cost_is_partial",
    )
    list_filter = ("surface", "status", "created_at", "cost_is_partial", "organization")
    search_fields = ("agent__name", "agent__slug", "prompt", "chat_account")
    list_select_related = ("organization", "agent", "version", "conversation")
    date_hierarchy = "created_at"
    inlines = [ToolCallInline]
    fields = (
        "id", "organization", "agent", "version", "conversation", "surface", "status",
        "user", "acting_role", "api_key", "embed_id", "chat_account",
        "prompt", "output", "error",
        "input_tokens", "output_tokens", "requests", "cost_usd", "cost_is_partial",
        "created_at", "started_at", "finished_at", "heartbeat_at", "cancel_requested",
        "messages_link", "spend_link",
    )
    readonly_fields = ("messages_link", "spend_link")

    @admin.display(description="run", ordering="id")
    def short_id(self, obj: Run) -> str:
        return str(obj.pk)[:8]

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Run) -> str:
        return admin_link(obj.organization)

    @admin.display(description="agent", ordering="agent__name")
    def agent_link(self, obj: Run) -> str:
        return admin_link(obj.agent)

    @admin.display(description="version")
    def version_link(self, obj: Run) -> str:
        return admin_link(obj.version, f"v{obj.version.number}")

    @admin.display(description="conversation")
    def conversation_link(self, obj: Run) -> str:
        return admin_link(obj.conversation, _short(obj.conversation, 40) if obj.conversation else None)

    @admin.display(description="transcript")
    def messages_link(self, obj: Run) -> str:
        return changelist_link(Message, "messages", run__id__exact=obj.pk)

    @admin.display(description="spend entries")
    def spend_link(self, obj: Run) -> str:
        from governance.models import SpendEntry

        return changelist_link(SpendEntry, "spend entries", run__id__exact=obj.pk)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None):
        extra_context = {**(extra_context or {}), "surface_summary": self.surface_summary(request)}
        return super().changelist_view(request, extra_context=extra_context)

    def surface_summary(self, request: HttpRequest) -> dict:
        """This calendar month, per surface: runs started and spend recorded in the ledger
        (the ledger, so a failed run still counts what it spent). Two grouped queries."""
        from governance.models import SpendEntry

        since = month_start()
        runs = Run.objects.filter(created_at__gte=since)
        spend = SpendEntry.objects.filter(created_at__gte=since)
        organization_id = request.GET.get("organization__id__exact")
        if organization_id:
            runs = runs.filter(organization_id=organization_id)
            spend = spend.filter(organization_id=organization_id)
        counts = {row["surface"]: row["n"] for row in runs.order_by().values("surface").annotate(n=Count("id"))}
        costs = {
            row["surface"]: row["cost"] or Decimal("0")
            for row in spend.order_by().values("surface").annotate(cost=Sum("cost_usd"))
        }
        labels = dict(Surface.choices)
        rows = [
            {
                "surface": labels.get(surface, surface or "other"),
                "runs": counts.get(surface, 0),
                "cost_usd": costs.get(surface, Decimal("0")),
            }
            for surface in sorted(set(counts) | set(costs), key=lambda s: (-costs.get(s, Decimal("0")), s))
        ]
        return {
            "since": since,
            "rows": rows,
            "total_runs": sum(counts.values()),
            "total_cost_usd": sum(costs.values(), Decimal("0")),
        }


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("id", "created_at", "conversation_link", "run_link", "role", "author_label", "content_short")
    list_filter = ("role", "created_at")
    search_fields = ("content", "author_label")
    list_select_related = ("conversation", "run")
    date_hierarchy = "created_at"
    fields = (
        "id", "conversation", "run", "version", "role", "author", "author_label",
        "content", "thinking", "parts", "attachments", "created_at",
    )

    @admin.display(description="conversation")
    def conversation_link(self, obj: Message) -> str:
        return admin_link(obj.conversation, _short(obj.conversation, 40))

    @admin.display(description="run")
    def run_link(self, obj: Message) -> str:
        return admin_link(obj.run, str(obj.run_id)[:8] if obj.run_id else None)

    @admin.display(description="content")
    def content_short(self, obj: Message) -> str:
        return _short(obj.content)


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = ("id", "started_at", "run_link", "tool_name", "capability_id", "status", "finished_at")
    list_filter = ("status", "capability_id", "started_at")
    search_fields = ("tool_name", "capability_id", "tool_call_id")
    list_select_related = ("run",)
    fields = ("id", "run", "message", "tool_call_id", "tool_name", "capability_id", "status", "args", "result", "started_at", "finished_at")

    @admin.display(description="run")
    def run_link(self, obj: ToolCall) -> str:
        return admin_link(obj.run, str(obj.run_id)[:8])


@admin.register(CompactedHistory)
class CompactedHistoryAdmin(ReadOnlyAdmin):
    """What a conversation replays after a compaction (capabilities/compaction/persisted.py): which run wrote it,
    through which message, and its size — not the dump itself (base64 images, the whole tool loop)."""

    list_display = ("conversation_link", "organization", "run_link", "through_message_id", "media", "updated_at")
    list_filter = ("media", "updated_at")
    list_select_related = ("organization", "conversation", "run")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The list never reads the dump itself (it may be megabytes of base64).
        qs = super().get_queryset(request)
        url_name = request.resolver_match.url_name if request.resolver_match else None
        return qs if url_name and url_name.endswith("_change") else qs.defer("messages")
    fields = ("conversation", "organization", "run", "through_message_id", "parts", "media", "updated_at")
    readonly_fields = fields

    @admin.display(description="conversation")
    def conversation_link(self, obj: CompactedHistory) -> str:
        return admin_link(obj.conversation, str(obj.conversation_id)[:8])

    @admin.display(description="run")
    def run_link(self, obj: CompactedHistory) -> str:
        return admin_link(obj.run, str(obj.run_id)[:8]) if obj.run_id else "—"

    @admin.display(description="messages")
    def parts(self, obj: CompactedHistory) -> int:
        return len(obj.messages or [])


@admin.register(ChatSettings)
class ChatSettingsAdmin(ReadOnlyAdmin):
    """Which profile writes each organization's chat titles (Settings → Chat sets it)."""

    list_display = ("organization", "title_profile", "updated_at")
    list_select_related = ("organization", "title_profile")
    fields = readonly_fields = ("organization", "title_profile", "updated_at")


@admin.register(ConversationShare)
class ConversationShareAdmin(ReadOnlyAdmin):
    """Read-only share links: which conversation, who made it, whether revoked — never the link's token."""

    list_display = ("conversation", "created_by", "created_at", "revoked_at")
    list_select_related = ("conversation", "created_by")
    fields = readonly_fields = ("conversation", "created_by", "created_at", "revoked_at")


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    """👍/👎 on answers (agents.feedback): rating and comment per message, person and run."""

    list_display = ("organization", "agent", "rating", "source", "rated_by", "updated_at")
    list_filter = ("rating", "updated_at")
    list_select_related = ("organization", "agent", "user")
    fields = readonly_fields = ("organization", "agent", "message", "run", "user", "source", "rater_label", "rating",
                                "comment", "updated_at")
