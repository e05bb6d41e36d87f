"""The kernel: people, organizations, memberships, API keys, the vault and the audit log."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.base_user import BaseUserManager
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agenticos.permissions import CUSTOM_PREFIX, KeyScope, Role, role_label


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def _create_user(self, email: str, password: str | None, **extra):
        if not email:
            raise ValueError("An email address is required.")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra):
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create_user(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra):
        extra["is_staff"] = True
        extra["is_superuser"] = True
        return self._create_user(email, password, **extra)


class User(AbstractUser):
    """A person. Signs in with an email address."""

    username = None  # type: ignore[assignment,misc]
    email = models.EmailField("email address", unique=True)
    display_name = models.CharField(max_length=150, blank=True)
    # The console's theme this person picked with the header's toggle ("" = follow the system), so it follows
    # them to every browser they sign in from.
    theme = models.CharField(max_length=8, blank=True, choices=[("", "system"), ("light", "light"), ("dark", "dark")])

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []  # type: ignore[misc]

    objects = UserManager()  # type: ignore[assignment,misc]

    def __str__(self) -> str:
        return self.email

    @property
    def label(self) -> str:
        return self.display_name or self.get_full_name() or self.email


def default_org_budget() -> Decimal | None:
    return settings.DEFAULT_ORG_MONTHLY_BUDGET_USD


class Organization(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    # Empty = uncapped.
    monthly_budget_usd = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True, default=default_org_budget
    )
    # The organization's logo (PNG/JPEG/WebP/GIF, sniffed), shown on hosted pages that ask for it.
    logo_path = models.CharField(max_length=300, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    # A built-in role (Role) or one of the organization's custom roles ("custom:<id>", identity.CustomRole).
    role = models.CharField(max_length=40, default=Role.MEMBER)
    is_suspended = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "user"], name="membership_unique_user_per_org"),
            models.CheckConstraint(condition=Q(role__in=Role.values) | Q(role__startswith=CUSTOM_PREFIX),
                                   name="membership_role_valid"),
        ]
        ordering = ["organization", "user__email"]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization} ({self.role})"

    @property
    def role_label(self) -> str:
        return role_label(self.role)


class Invitation(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=40, default=Role.MEMBER)  # as Membership.role
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    created_at = models.DateTimeField(default=timezone.now)
    accepted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.email} → {self.organization}"

    @property
    def role_label(self) -> str:
        return role_label(self.role)


class ApiKey(models.Model):
    """A bearer token acting with its user's rights in one organization. Only its hash is stored."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_keys")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    # What the key may do within its person's rights (agenticos.permissions.KeyScope): read, run or admin.
    # Keys made before scopes existed keep everything their person may do.
    scope = models.CharField(max_length=16, choices=KeyScope.choices, default=KeyScope.ADMIN)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class SecretKind(models.TextChoices):
    API_KEY = "api_key", "API key"
    CUSTOM = "custom", "Custom"
    AWS_CREDENTIALS = "aws_credentials", "AWS credentials"
    DATABASE_DSN = "database_dsn", "Database DSN"
    JWT_SECRET = "jwt_secret", "JWT secret"
    BOT_TOKEN = "bot_token", "Bot token"
    # The auth.json Codex writes after "Sign in with ChatGPT" (agenticos/secret_formats.py); only the coding
    # agent's Codex takes it, and it reseals what Codex refreshed.
    CODEX_CHATGPT = "codex_chatgpt", "Codex ChatGPT sign-in"


class Secret(models.Model):
    """A sealed value. Envelope encryption: see agenticos.vault. No code path returns the value
    except `vault.reveal`, which only runtime code (model clients, tool calls) may use."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="secrets")
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=32, choices=SecretKind.choices, default=SecretKind.API_KEY)
    description = models.CharField(max_length=300, blank=True)
    hint = models.CharField(max_length=4, blank=True)
    key_version = models.PositiveIntegerField()
    wrapped_key = models.BinaryField()
    ciphertext = models.BinaryField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="secret_unique_name_per_org"),
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} (…{self.hint})" if self.hint else self.name


class AuditEvent(models.Model):
    """Who did what to which object. Written in the same transaction as the change; never edited."""

    organization = models.ForeignKey(
        Organization, on_delete=models.SET_NULL, null=True, blank=True, related_name="audit_events"
    )
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    actor_label = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=80, db_index=True)
    target_type = models.CharField(max_length=60, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_name = models.CharField(max_length=300, blank=True)
    details = models.JSONField(default=dict, blank=True)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="audit_org_time")]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type}:{self.target_name}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("Audit events are read-only.")
        super().save(*args, **kwargs)
