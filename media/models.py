"""One row per generated file (image, speech clip, video clip)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class GeneratedMedia(models.Model):
    """A file an agent made. The bytes live in default_storage at `path`; `filename` is the public handle
    (`/api/v1/generated/<filename>`), random so it reveals nothing. It goes with its conversation."""

    class Kind(models.TextChoices):
        IMAGE = "image", "Image"
        SPEECH = "speech", "Speech"
        VIDEO = "video", "Video"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey("agenticos.Organization", on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey("agents.Conversation", on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="+")
    run = models.ForeignKey("agents.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    filename = models.CharField(max_length=80, unique=True)
    path = models.CharField(max_length=300)
    name = models.CharField(max_length=200)
    media_type = models.CharField(max_length=80)
    size = models.BigIntegerField()
    # Recognises a generated image written to a workspace by its bytes, not its name (video from an image).
    sha256 = models.CharField(max_length=64, db_index=True)
    workspace_path = models.CharField(max_length=300, blank=True)
    # Which provider/model made it (for the operator; never a key).
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=120, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["organization", "created_at"], name="genmedia_org_created")]

    def __str__(self) -> str:
        return self.filename
