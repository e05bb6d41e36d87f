"""An organization's MCP servers, and the OAuth credentials of the ones connected from the catalog.

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
    # Set for a server added from the catalog (capabilities.mcp.catalog): its URL is the catalog's, its
    # credentials are McpCredential rows (OAuth), never `auth_secret`.
    catalog_key = models.CharField(max_length=40, blank=True, default="")
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


class McpCredential(models.Model):
    """What the MCP authorization flow left for a catalog connection: the OAuth client AgenticOS registered
    and the tokens it was given, sealed together (agenticos.vault), for the organization (`user` null) or for
    one person, as the catalog entry says. `metadata` holds what discovery found (authorization-server and
    protected-resource metadata: public documents), so a refresh in another process asks the right server.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="+")
    connection = models.ForeignKey(McpConnection, on_delete=models.CASCADE, related_name="credentials")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True,
                             related_name="+")
    # Sealed JSON {"client": OAuthClientInformationFull, "tokens": OAuthToken | null}.
    key_version = models.PositiveIntegerField()
    wrapped_key = models.BinaryField()
    ciphertext = models.BinaryField()
    metadata = models.JSONField(default=dict, blank=True)
    # When the access token stops working (from expires_in); null = the server gave no lifetime.
    expires_at = models.DateTimeField(null=True, blank=True)
    connected_at = models.DateTimeField(null=True, blank=True)  # null while the person has not finished
    refreshed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["connection", "user"], name="mcp_credential_one_per_person"),
            models.UniqueConstraint(fields=["connection"], condition=models.Q(user__isnull=True),
                                    name="mcp_credential_one_per_org"),
        ]

    def __str__(self) -> str:
        return f"{self.connection_id} ({self.user_id or 'organization'})"
