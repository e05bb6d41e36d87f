"""The follow-ups written for one answer: persisted so web chat draws the same buttons when reopened."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class FollowUp(models.Model):
    """Up to three next steps a separate model suggested for one assistant message (`message`).

    `run` is the auxiliary run that wrote them (Activity's "Next steps" run, metered on its own); `source_run`
    the run whose answer they follow. `status` says what happened: only `ready` rows are ever drawn."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        READY = "ready", "Ready"
        EMPTY = "empty", "No suggestion"
        REFUSED = "refused", "Refused by a budget"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped (busy)"

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey("agents.Conversation", on_delete=models.CASCADE, related_name="+")
    message = models.OneToOneField("agents.Message", on_delete=models.CASCADE, related_name="follow_up")
    source_run = models.ForeignKey("agents.Run", on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey("agents.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    steps = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Where the buttons were sent besides web chat ("slack"), with the chat and thread, for the click check.
    delivered_to = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "capabilities"

    def __str__(self) -> str:
        return f"follow-ups of message {self.message_id} ({self.status})"
