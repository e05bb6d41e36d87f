"""Embeds: a website widget, a raw WebSocket and a hosted page are one table, told apart by `kind`.

The kind is fixed at creation: a pasted script tag, a written client and a sent link all name the same row.
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agenticos.models import Organization, Secret

DEFAULT_ACCENT = "#4f46e5"


def new_public_key() -> str:
    # 24 random bytes, URL-safe: a hosted page is protected by nothing but this being unguessable.
    return secrets.token_urlsafe(24)


class Embed(models.Model):
    class Kind(models.TextChoices):
        WIDGET = "widget", "Website widget"
        SOCKET = "socket", "Raw WebSocket"
        PAGE = "page", "Hosted page"

    class AuthMode(models.TextChoices):
        PUBLIC = "public", "Anonymous visitors"
        JWT = "jwt", "Visitors vouched for by your backend (JWT)"

    class Corner(models.TextChoices):
        BOTTOM_RIGHT = "bottom-right", "Bottom right"
        BOTTOM_LEFT = "bottom-left", "Bottom left"

    class Logo(models.TextChoices):
        AGENT = "agent", "The agent's avatar"
        ORGANIZATION = "organization", "The organization's logo"
        UPLOADED = "uploaded", "An uploaded image"
        NONE = "none", "None"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="embeds")
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="embeds")
    # The environment it serves, by name; its version is resolved at each message.
    environment = models.SlugField(max_length=40, default="production")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    name = models.CharField(max_length=120, blank=True)
    public_key = models.CharField(max_length=64, unique=True, default=new_public_key, editable=False)
    auth_mode = models.CharField(max_length=8, choices=AuthMode.choices, default=AuthMode.PUBLIC)
    jwt_secret = models.ForeignKey(Secret, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    # Exact origins ("https://shop.example.com"). Empty allows nothing; a page has none at all.
    allowed_origins = models.JSONField(default=list, blank=True)

    # Appearance (widget header, greeting drawn by the client and never sent to the model, …).
    title = models.CharField(max_length=120, blank=True)
    subtitle = models.CharField(max_length=200, blank=True)
    greeting = models.TextField(blank=True)
    empty_text = models.CharField(max_length=200, blank=True)
    launcher_text = models.CharField(max_length=60, blank=True)
    accent_color = models.CharField(max_length=7, default=DEFAULT_ACCENT)
    corner = models.CharField(max_length=12, choices=Corner.choices, default=Corner.BOTTOM_RIGHT)

    context_note = models.TextField(blank=True)
    # [{name, required, description, url_safe}]
    variables = models.JSONField(default=list, blank=True)
    rate_limit_per_minute = models.PositiveIntegerField(default=20)
    monthly_budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    is_paused = models.BooleanField(default=False)

    # Hosted page only.
    welcome = models.TextField(blank=True)
    logo_source = models.CharField(max_length=16, choices=Logo.choices, default=Logo.AGENT)
    # Written by the upload route only, never by config a caller sends.
    logo_path = models.CharField(max_length=300, blank=True, editable=False)
    show_tool_steps = models.BooleanField(default=True)
    show_tool_results = models.BooleanField(default=False)
    show_thinking = models.BooleanField(default=False)
    allow_new_thread = models.BooleanField(default=True)
    allow_microphone = models.BooleanField(default=False)
    allow_uploads = models.BooleanField(default=False)

    # The publisher: runs execute under their authority, turns and uploads are owned by them.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["agent", "created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=["widget", "socket", "page"]), name="embed_kind_valid"),
            models.CheckConstraint(condition=Q(auth_mode__in=["public", "jwt"]), name="embed_auth_mode_valid"),
            models.CheckConstraint(
                condition=~Q(kind="page") | Q(allowed_origins=[]), name="embed_page_has_no_origin_list"
            ),
            models.CheckConstraint(condition=~Q(kind="page") | Q(auth_mode="public"), name="embed_page_is_not_jwt"),
            models.CheckConstraint(
                condition=~Q(kind="page") | ~Q(variables__contains=[{"required": True, "url_safe": False}]),
                name="embed_page_required_variables_url_safe",
            ),
            models.CheckConstraint(
                condition=Q(show_tool_steps=True) | Q(show_tool_results=False), name="embed_results_need_steps"
            ),
            models.CheckConstraint(
                condition=~Q(auth_mode="jwt") | Q(jwt_secret__isnull=False), name="embed_jwt_has_secret"
            ),
            models.CheckConstraint(condition=Q(rate_limit_per_minute__gte=1), name="embed_rate_limit_positive"),
        ]

    def __str__(self) -> str:
        return self.name or f"{self.get_kind_display()} of {self.agent_id}"


class EmbedFile(models.Model):
    """A file a hosted-page visitor attached. Owned by the page's publisher (a visitor has no account).

    Attached at most once: a frame may only name an unattached file of this page's owner.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    embed = models.ForeignKey(Embed, on_delete=models.CASCADE, related_name="files")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=255)
    mime = models.CharField(max_length=100)
    size = models.PositiveIntegerField()
    path = models.CharField(max_length=300)
    message = models.ForeignKey(
        "agents.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    attached_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name
