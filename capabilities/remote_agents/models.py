"""A remote agent registered by its A2A agent card, for one organization."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class RemoteAgent(models.Model):
    """Registered by its agent-card URL (read and validated on save). Its key, when it has one, is an
    organization `Secret` sent as a bearer token; deleting that secret deletes the registration (CASCADE)
    rather than leaving it calling without one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE,
                                     related_name="remote_agents")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True, default="")
    card_url = models.CharField(max_length=2000)
    endpoint_url = models.CharField(max_length=2000)
    card = models.JSONField(default=dict, blank=True)  # the card as read at the last save
    secret = models.ForeignKey("agenticos.Secret", on_delete=models.CASCADE, null=True, blank=True,
                               related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    checked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        verbose_name = "remote agent"
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="remote_agent_name_unique_per_org"),
        ]

    def __str__(self) -> str:
        return self.name
