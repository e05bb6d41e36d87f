"""A notification: something one person of an organization should look at (the header bell counts the unread)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from agenticos.models import Organization


class Notification(models.Model):
    class Kind(models.TextChoices):
        # Someone asked the agent's owner to enable a capability the agent lacks (the missing-capability card).
        CAPABILITY_REQUEST = "capability_request", "Capability request"
        # A rollout's candidate crossed a threshold and was rolled back by itself (agents.rollouts).
        ROLLOUT_ROLLED_BACK = "rollout_rolled_back", "Rollout rolled back"
        # A run parked on a gated tool call: everyone who may decide it is told (notifications.receivers).
        APPROVAL_REQUESTED = "approval_requested", "Approval requested"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="notifications")
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=40, choices=Kind.choices)
    text = models.CharField(max_length=500)
    # A path inside the console (never an outside address): where the notification takes its reader.
    link = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["recipient", "organization", "-created_at"], name="notif_recipient_time")]

    def __str__(self) -> str:
        return self.text[:60]

    @property
    def is_read(self) -> bool:
        return self.read_at is not None


class EmailPreference(models.Model):
    """The kinds of notification one person also receives by e-mail in one organization (none unless they ask:
    the bell is always on; e-mail is the person's choice, on the Notifications page)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kinds = models.JSONField(default=list)  # values of Notification.Kind
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "user"], name="email_preference_one_per_member")]

    def __str__(self) -> str:
        return f"{self.user_id}@{self.organization_id}: {', '.join(self.kinds) or '-'}"
