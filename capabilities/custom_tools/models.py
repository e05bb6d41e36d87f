"""Custom REST tools and the AI tool builder's sessions, kits and drafts. Credentials are references to vault
secrets, never plaintext.

The app is `capabilities` (its migrations): capabilities/models.py imports these so Django registers them.
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
