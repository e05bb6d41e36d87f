"""Tools from outside the code: custom REST tools (+ kits, drafts, builder sessions), database and MCP connections.

Every row belongs to one organization; credentials are references to vault secrets (or, for a database
DSN, sealed here with the same vault), never plaintext.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class CustomTool(models.Model):
    """One named REST call an agent can make. `alias` is the stable id the agent calls and approvals key on."""

    class Method(models.TextChoices):
        GET = "GET"
        POST = "POST"
        PUT = "PUT"
        PATCH = "PATCH"
        DELETE = "DELETE"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="custom_tools")
    name = models.CharField(max_length=120)
    alias = models.CharField(max_length=64)
    description = models.TextField(blank=True)
    usage_notes = models.TextField(blank=True)
    method = models.CharField(max_length=8, choices=Method.choices, default=Method.GET)
    url = models.CharField(max_length=2000)
    # [{name, location, type, required, mode: ai|fixed, value, description}] — see custom_tools.schema
    parameters = models.JSONField(default=list, blank=True)
    # {family: none|header|query|hmac|jwt, ...} — see custom_tools.schema.Auth
    auth = models.JSONField(default=dict, blank=True)
    credential = models.ForeignKey(
        "agenticos.Secret", on_delete=models.PROTECT, null=True, blank=True, related_name="custom_tools"
    )
    tags = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)  # [{level: info|warning|critical, text}]
    sample_outputs = models.JSONField(default=list, blank=True)  # kept with the kit; never used at runtime
    timeout_secs = models.FloatField(default=30)
    kit_name = models.CharField(max_length=200, blank=True)
    template_key = models.CharField(max_length=80, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "alias"], name="custom_tool_alias_unique_per_org"),
            models.CheckConstraint(
                condition=models.Q(method__in=["GET", "POST", "PUT", "PATCH", "DELETE"]),
                name="custom_tool_method_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.alias})"


class ToolBuilderSession(models.Model):
    """A long-lived AI-builder conversation. Kits accumulate in it; each is finalized on its own."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="tool_sessions")
    title = models.CharField(max_length=200, blank=True)
    conversation = models.ForeignKey(
        "agents.Conversation", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title or f"Tool builder {self.pk}"


class ToolKit(models.Model):
    """Tools created together for one provider + credential ("HubSpot Contacts")."""

    class Status(models.TextChoices):
        OPEN = "open"
        FINALIZED = "finalized"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="tool_kits")
    session = models.ForeignKey(ToolBuilderSession, on_delete=models.CASCADE, related_name="kits")
    name = models.CharField(max_length=200)
    provider = models.CharField(max_length=120, blank=True)
    credential = models.ForeignKey("agenticos.Secret", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    warnings = models.JSONField(default=list, blank=True)  # kit-wide; travel to every tool on finalize
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(default=timezone.now)
    finalized_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.name


class ToolDraft(models.Model):
    """One tool inside a kit, moving draft → configured → tested → validated → created."""

    class State(models.TextChoices):
        DRAFT = "draft"
        CONFIGURED = "configured"
        TESTED = "tested"
        VALIDATED = "validated"
        CREATED = "created"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="+")
    kit = models.ForeignKey(ToolKit, on_delete=models.CASCADE, related_name="drafts")
    name = models.CharField(max_length=120)
    state = models.CharField(max_length=16, choices=State.choices, default=State.DRAFT)
    definition = models.JSONField(default=dict, blank=True)  # custom_tools.schema.Definition when configured
    warnings = models.JSONField(default=list, blank=True)
    sample_outputs = models.JSONField(default=list, blank=True)
    test_args = models.JSONField(default=dict, blank=True)
    test_status = models.IntegerField(null=True, blank=True)
    test_ok = models.BooleanField(null=True, blank=True)
    test_preview = models.TextField(blank=True)  # compact, shown beside the draft
    test_full = models.TextField(blank=True)  # the full response, kept apart for review
    test_error = models.TextField(blank=True)
    tested_at = models.DateTimeField(null=True, blank=True)
    created_tool = models.ForeignKey(CustomTool, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=["draft", "configured", "tested", "validated", "created"]),
                name="tool_draft_state_valid",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} [{self.state}]"


class DatabaseConnection(models.Model):
    """A customer database an agent may query. The DSN is sealed with the vault; permission decides SQL."""

    class Engine(models.TextChoices):
        POSTGRESQL = "postgresql", "PostgreSQL"

    class Permission(models.TextChoices):
        READ = "read"
        WRITE = "write"
        FULL = "full"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="db_connections")
    name = models.CharField(max_length=64)
    engine = models.CharField(max_length=16, choices=Engine.choices, default=Engine.POSTGRESQL)
    permission = models.CharField(max_length=8, choices=Permission.choices, default=Permission.READ)
    key_version = models.PositiveIntegerField()
    wrapped_key = models.BinaryField()
    ciphertext = models.BinaryField()
    statement_timeout_ms = models.PositiveIntegerField(default=5000)
    row_cap = models.PositiveIntegerField(default=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="db_connection_name_unique_per_org"),
            models.CheckConstraint(condition=models.Q(permission__in=["read", "write", "full"]),
                                   name="db_connection_permission_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class McpConnection(models.Model):
    """An MCP server registered for an organization. Its tools arrive prefixed with `name`."""

    class Transport(models.TextChoices):
        STREAMABLE_HTTP = "streamable_http"
        SSE = "sse"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="mcp_connections")
    name = models.CharField(max_length=32)
    url = models.CharField(max_length=2000)
    transport = models.CharField(max_length=20, choices=Transport.choices, default=Transport.STREAMABLE_HTTP)
    auth_header = models.CharField(max_length=64, blank=True, default="Authorization")
    auth_prefix = models.CharField(max_length=32, blank=True, default="Bearer ")
    auth_secret = models.ForeignKey("agenticos.Secret", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    tools = models.JSONField(default=list, blank=True)  # [{name, description}] from the last check
    checked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="mcp_connection_name_unique_per_org"),
        ]

    def __str__(self) -> str:
        return self.name


class SpilledOutput(models.Model):
    """The full content behind a spilled tool result's handle, kept with its run so a handle still reads after
    the run parks for an approval or an answer and resumes in another worker. Deleted with the run, and
    swept once the run has finished (`capabilities.tasks.sweep_spilled_outputs`)."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey("agents.Run", on_delete=models.CASCADE, related_name="+")
    handle = models.CharField(max_length=500)
    content = models.BinaryField()
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "handle"], name="spilled_output_handle_unique_per_run"),
        ]

    def __str__(self) -> str:
        return f"{self.handle} ({self.size} bytes)"


class Workspace(models.Model):
    """An agent's files that survive between turns (capability `sandbox`, backend `state`: this database).

    Who shares one is its `scope` and `key` (see `capabilities.sandbox.store.resolve`): a run, a
    conversation, a chat channel, a person, or everyone who talks to the agent. `conversation` is set for the
    run and conversation scopes so the files go when the conversation is deleted.
    """

    class Scope(models.TextChoices):
        RUN = "run"
        CONVERSATION = "conversation"
        CHANNEL = "channel"
        USER = "user"
        AGENT = "agent"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="workspaces")
    backend = models.CharField(max_length=16, default="state")
    scope = models.CharField(max_length=16, choices=Scope.choices)
    key = models.CharField(max_length=300)
    # Who the files belong to, in words (the files panel says it: "Shared by everyone who talks to …").
    label = models.CharField(max_length=300, blank=True)
    conversation = models.ForeignKey("agents.Conversation", on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "agent", "backend", "scope", "key"],
                                    name="workspace_unique_per_scope_key"),
        ]

    def __str__(self) -> str:
        return f"{self.scope}:{self.key}"


class WorkspaceFile(models.Model):
    """One file (or an explicitly made directory) of a stored workspace, by absolute POSIX path.

    `created_by_run` is the run that created the path; a later overwrite keeps it, which is how a channel
    reply sends only the files the agent made this turn.
    """

    id = models.BigAutoField(primary_key=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1000)
    is_dir = models.BooleanField(default=False)
    data = models.BinaryField(default=b"")
    size = models.PositiveBigIntegerField(default=0)
    created_by_run = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "path"], name="workspace_file_path_unique"),
        ]
        indexes = [models.Index(fields=["workspace", "created_by_run"], name="wsfile_run")]

    def __str__(self) -> str:
        return self.path


class WorkspaceUse(models.Model):
    """Which workspace a conversation's runs worked in, most recent first: what the files panel of that
    conversation shows (a workspace of scope user, channel or agent is used by many conversations)."""

    id = models.BigAutoField(primary_key=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="uses")
    conversation = models.ForeignKey("agents.Conversation", on_delete=models.CASCADE, related_name="+")
    last_used_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "conversation"], name="workspace_use_unique"),
        ]
        indexes = [models.Index(fields=["conversation", "-last_used_at"], name="wsuse_conv_recent")]

    def __str__(self) -> str:
        return f"{self.conversation_id} → {self.workspace_id}"


class SandboxConnection(models.Model):
    """A sandbox service an organization's agents may run workspaces on (capability `sandbox`, backend
    `service`). Where a sandbox runs is the connection's property, never the spec's.

    `is_deployment` marks "This deployment's sandbox": its address is the operator's SANDBOXD_URL (never
    stored, never tenant-settable); any other connection's URL is checked by the outbound guard. The service
    token is an organization `Secret` (`secret`); a connection without one cannot be published against."""

    class Kind(models.TextChoices):
        SANDBOXD = "sandboxd", "sandboxd"
        DAYTONA = "daytona", "Daytona"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE,
                                     related_name="sandbox_connections")
    name = models.CharField(max_length=80)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.SANDBOXD)
    url = models.CharField(max_length=2000, blank=True)
    is_deployment = models.BooleanField(default=False)
    is_default = models.BooleanField(default=False)
    secret = models.ForeignKey("agenticos.Secret", on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="sandbox_connection_name_unique"),
            models.UniqueConstraint(fields=["organization"], condition=models.Q(is_default=True),
                                    name="sandbox_connection_one_default"),
            models.UniqueConstraint(fields=["organization"], condition=models.Q(is_deployment=True),
                                    name="sandbox_connection_one_deployment"),
        ]

    def __str__(self) -> str:
        return self.name


# The follow-ups capability keeps its model in its own folder (one folder per capability).
from capabilities.follow_ups.models import FollowUp  # noqa: E402, F401


class JailIdentity(models.Model):
    """The host uid an organization's `run_python` programs run as: RUN_PYTHON_UID_BASE + this row's id.

    One row per organization, made by its first program; never deleted and no foreign key on purpose: a uid is
    never given to another organization, even after this one is gone (capabilities/code_execution/identity.py).
    """

    id = models.BigAutoField(primary_key=True)
    organization_id = models.UUIDField(unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.organization_id} → +{self.id}"
