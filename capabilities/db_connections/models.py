"""A customer database an agent may query: the DSN sealed with the vault.

The app is `capabilities` (its migrations): capabilities/models.py imports these so Django registers them.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


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
