"""An application (artifact): identity (organization, agent, environment, name), an owner, who else reads it
(visibility + per-person grants, capabilities/artifacts/access.py), and its versions, newest last."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Artifact(models.Model):
    class Visibility(models.TextChoices):
        PRIVATE = "private", "Its owner and the people it is shared with"
        ORGANIZATION = "organization", "Everyone in the organization"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="+")
    environment = models.CharField(max_length=40)
    name = models.CharField(max_length=64)
    title = models.CharField(max_length=200, blank=True)
    # The person the first publish was made for: private to them until a person widens it.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    visibility = models.CharField(max_length=12, choices=Visibility.choices, default=Visibility.PRIVATE)
    current_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "agent", "environment", "name"],
                                    name="artifact_unique_identity"),
            models.CheckConstraint(condition=Q(visibility__in=["private", "organization"]),
                                   name="artifact_visibility_valid"),
        ]
        # Grant levels (access.py): view (the default permission) < edit.
        permissions = [("edit_artifact", "Publish new versions of the application, and share it")]

    def __str__(self) -> str:
        return f"{self.name} ({self.environment})"


class ArtifactVersion(models.Model):
    class Format(models.TextChoices):
        HTML = "html", "HTML"
        MARKDOWN = "markdown", "Markdown"

    artifact = models.ForeignKey(Artifact, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    format = models.CharField(max_length=10, choices=Format.choices)
    content = models.TextField()
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    run = models.ForeignKey("agents.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["artifact", "number"]
        constraints = [models.UniqueConstraint(fields=["artifact", "number"], name="artifact_version_unique")]

    def __str__(self) -> str:
        return f"{self.artifact_id} v{self.number}"
