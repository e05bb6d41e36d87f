"""An organization's MCP servers.

The app is `capabilities` (its migrations): capabilities/models.py imports these so Django registers them.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


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
