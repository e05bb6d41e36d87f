"""Spend ledger, parked approvals and parked questions."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agenticos.models import Organization


class SpendEntry(models.Model):
    """One priced model request (or embedding / transcription call). Budgets sum these."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="spend")
    agent = models.ForeignKey("agents.Agent", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    run = models.ForeignKey("agents.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="spend")
    embed_id = models.UUIDField(null=True, blank=True)
    surface = models.CharField(max_length=16, blank=True)
    kind = models.CharField(max_length=24, default="model_request")
    model = models.CharField(max_length=200, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    is_partial = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "created_at"], name="spend_org_time"),
            models.Index(fields=["agent", "created_at"], name="spend_agent_time"),
            models.Index(fields=["embed_id", "created_at"], name="spend_embed_time"),
        ]
        verbose_name_plural = "spend entries"

    def __str__(self) -> str:
        return f"{self.cost_usd} USD ({self.kind})"


class Approval(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="approvals")
    run = models.ForeignKey("agents.Run", on_delete=models.CASCADE, related_name="approvals")
    tool_call_id = models.CharField(max_length=200)
    tool_id = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=200)
    capability_id = models.CharField(max_length=80, blank=True)
    args = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    note = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["run", "tool_call_id"], name="approval_unique_call"),
            models.CheckConstraint(condition=Q(status__in=["pending", "approved", "rejected", "expired"]), name="approval_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"


class Question(models.Model):
    """ask_user: questions parked on a run until the person asked answers them."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ANSWERED = "answered", "Answered"
        EXPIRED = "expired", "Expired"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="questions")
    run = models.ForeignKey("agents.Run", on_delete=models.CASCADE, related_name="questions")
    asked_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    tool_call_id = models.CharField(max_length=200)
    questions = models.JSONField()
    answers = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Question on {self.run_id} ({self.status})"


class RetentionPolicy(models.Model):
    """An organization's retention values (Settings → Data retention, owner only). A null field is the
    deployment's default (RETENTION_* env); 0 is "keep: never delete". The spend ledger has no field here:
    it is never deleted, because every budget cap is computed from it."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, primary_key=True,
                                        related_name="retention")
    # Days a run's transcript (messages, tool calls, the run's prompt and answer text) is kept.
    transcript_days = models.PositiveIntegerField(null=True, blank=True)
    audit_log_days = models.PositiveIntegerField(null=True, blank=True)
    # Days a workspace of scope user / channel / agent may sit unused before it goes with its files.
    idle_workspace_days = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")

    class Meta:
        verbose_name_plural = "retention policies"

    def __str__(self) -> str:
        return f"Retention of {self.organization_id}"


class PendingFileRemoval(models.Model):
    """A stored file (default_storage) whose conversation or message is gone, waiting for the sweep that
    deletes it. Written in the transaction that deletes the rows, so a rolled-back deletion leaves the file
    and a storage failure leaves the row for the next sweep. No foreign key: it outlives its organization."""

    id = models.BigAutoField(primary_key=True)
    organization_id = models.UUIDField(null=True, blank=True)
    path = models.CharField(max_length=500)
    reason = models.CharField(max_length=32)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.path
