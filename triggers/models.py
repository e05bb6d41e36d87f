"""Work that starts by itself: schedule and event triggers, their signing secrets and the firing ledger.

A `Trigger` runs one agent's environment with a prompt, on a schedule (cron or an interval, in an IANA
timezone) or when a signed webhook arrives. The run acts with its creator's authority, not their identity
(see `knowledge.runtime.audience_for`). Every firing is one `TriggerFiring` row, unique per (trigger, due
time): the claim that lets two beat processes fire a schedule at most once, and the run ↔ trigger link.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.timezone import now

from agenticos.models import Organization


class Trigger(models.Model):
    class Kind(models.TextChoices):
        SCHEDULE = "schedule", "Schedule"
        EVENT = "event", "Event (signed webhook)"

    class Overlap(models.TextChoices):
        SKIP = "skip", "Skip a firing while the previous run is still going"
        QUEUE = "queue", "Queue it until the previous run ends"

    class Delivery(models.TextChoices):
        NONE = "none", "Nowhere but the run ledger"
        CONVERSATION = "conversation", "A conversation of the creator's"
        CHANNEL = "channel", "A chat channel through one of the agent's bots"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="triggers")
    environment = models.SlugField(max_length=40, default="production")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The prompt; an event's payload goes where `{{payload}}` stands (or after the text), as marked data.
    prompt = models.TextField()
    run_as_creator = models.BooleanField(default=False)
    creator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    enabled = models.BooleanField(default=True)
    # Schedule: exactly one of cron (5 fields) / every_seconds (>= 60), read in `timezone`.
    cron = models.CharField(max_length=120, blank=True)
    every_seconds = models.PositiveIntegerField(null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    starts_at = models.DateTimeField(null=True, blank=True)
    ends_at = models.DateTimeField(null=True, blank=True)
    overlap = models.CharField(max_length=8, choices=Overlap.choices, default=Overlap.SKIP)
    # The next due time of an enabled schedule (None: paused, ended, or an event trigger).
    next_run_at = models.DateTimeField(null=True, blank=True)
    # Event: the public key in the webhook URL (24 random bytes, urlsafe).
    key = models.CharField(max_length=64, null=True, blank=True, unique=True)
    delivery = models.CharField(max_length=16, choices=Delivery.choices, default=Delivery.NONE)
    delivery_conversation = models.ForeignKey("agents.Conversation", on_delete=models.SET_NULL, null=True,
                                              blank=True, related_name="+")
    delivery_binding = models.ForeignKey("channelbots.Binding", on_delete=models.SET_NULL, null=True, blank=True,
                                         related_name="+")
    delivery_chat_id = models.CharField(max_length=200, blank=True)
    delivery_thread = models.CharField(max_length=200, blank=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ["name"]
        indexes = [
            models.Index(fields=["next_run_at"], name="trigger_due", condition=Q(enabled=True, kind="schedule")),
            models.Index(fields=["organization", "agent"], name="trigger_org_agent"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(every_seconds__isnull=True) | Q(every_seconds__gte=60),
                                   name="trigger_interval_at_least_a_minute"),
        ]

    def __str__(self) -> str:
        return self.name


class TriggerSecret(models.Model):
    """An event trigger's signing secret, sealed with `agenticos.vault` (its own row rather than an
    organization `Secret`: it is minted here, shown once, never bound elsewhere, and goes with its trigger;
    `manage.py vault_rewrap` finds it by its sealed fields)."""

    trigger = models.OneToOneField(Trigger, on_delete=models.CASCADE, primary_key=True, related_name="secret")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    key_version = models.PositiveIntegerField()
    wrapped_key = models.BinaryField()
    ciphertext = models.BinaryField()
    created_at = models.DateTimeField(default=now)
    rotated_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"signing secret of {self.trigger_id}"


class TriggerFiring(models.Model):
    class Status(models.TextChoices):
        STARTED = "started", "Started a run"
        WAITING = "waiting", "Waiting for the previous run (overlap: queue)"
        SKIPPED = "skipped", "Skipped"
        FAILED = "failed", "Failed to start"

    class Source(models.TextChoices):
        SCHEDULE = "schedule", "Schedule"
        EVENT = "event", "Webhook event"
        MANUAL = "manual", "Fired by hand"

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    trigger = models.ForeignKey(Trigger, on_delete=models.CASCADE, related_name="firings")
    # Schedule: the due time this firing claims (unique per trigger); events and manual firings: received.
    due_at = models.DateTimeField()
    source = models.CharField(max_length=16, choices=Source.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    reason = models.CharField(max_length=300, blank=True)
    run = models.ForeignKey("agents.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # Queued firings keep their prompt until they start (an event's payload is already in it).
    prompt = models.TextField(blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ["-due_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["trigger", "due_at"], condition=Q(source="schedule"),
                                    name="trigger_firing_once_per_due_time"),
        ]
        indexes = [models.Index(fields=["trigger", "-created_at"], name="firing_trigger_time")]

    def __str__(self) -> str:
        return f"{self.trigger_id} @ {self.due_at:%Y-%m-%d %H:%M} ({self.status})"
