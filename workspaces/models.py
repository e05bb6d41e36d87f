"""Workspaces and the sandbox services an organization runs them on.

These models were the capabilities app's until the workspaces app took them (migration 0001 here, state only):
their tables keep their names (`db_table`), so no row moved."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class Workspace(models.Model):
    """An agent's files that survive between turns (capability `sandbox`, backend `state`: this database).

    Who shares one is its `scope` and `key` (see `workspaces.store.resolve`): a run, a
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
        db_table = "capabilities_workspace"
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
        db_table = "capabilities_workspacefile"
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
        db_table = "capabilities_workspaceuse"
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
        db_table = "capabilities_sandboxconnection"
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
