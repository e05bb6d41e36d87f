"""Operator console for the kernel: people, organizations, members, API keys, the vault and the audit log.

Habits shared by every app's admin live here (`admin_link`, `ReadOnlyAdmin`, `AuditedAdmin`):
ledgers are read-only, changelists select their related rows up front (no N+1), related rows link to
each other, and every change made through the console leaves an audit event in the same transaction.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django import forms
from django.apps import apps
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.db import models, transaction
from django.db.models import Count, DecimalField, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import urlencode

from agenticos import audit, vault
from agenticos.models import (
    ApiKey,
    AuditEvent,
    Invitation,
    Membership,
    Organization,
    Secret,
    User,
)
from agenticos.permissions import Role

admin.site.site_header = "AgenticOS operator console"
admin.site.site_title = "AgenticOS"
admin.site.index_title = "Operate"


# ------------------------------------------------------------------ shared habits


def admin_url(obj: Any) -> str:
    meta = obj._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])


def admin_link(obj: Any, label: object | None = None) -> str:
    """A link to a related row's admin page; '–' when there is none. The caller selects `obj` up front."""
    if obj is None:
        return "–"
    return format_html('<a href="{}">{}</a>', admin_url(obj), label if label is not None else obj)


def changelist_link(model: type[models.Model], label: object, **filters: object) -> str:
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    return format_html('<a href="{}?{}">{}</a>', url, urlencode({k: str(v) for k, v in filters.items()}), label)


def month_start(now: datetime | None = None) -> datetime:
    now = timezone.localtime(now or timezone.now())
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _organization_of(obj: Any) -> Organization | None:
    if isinstance(obj, Organization):
        return obj
    for path in ("organization", "agent.organization", "run.organization", "conversation.organization"):
        target = obj
        for attr in path.split("."):
            target = getattr(target, attr, None)
            if target is None:
                break
        if isinstance(target, Organization):
            return target
    return None


class AuditedAdmin(admin.ModelAdmin):
    """Changes made in the console are audited like any other change (the admin view is atomic,
    so the audit row lands in the same transaction as the change)."""

    def _audit(self, request: HttpRequest, obj: Any, verb: str, details: dict | None = None) -> None:
        audit.record(
            actor=request.user,
            organization=_organization_of(obj),
            action=f"admin.{obj._meta.model_name}.{verb}",
            target=obj,
            details={"via": "admin", **(details or {})},
            ip_address=request.META.get("REMOTE_ADDR"),
        )

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # Field names only: values may be sensitive and the audit log is widely readable.
        self._audit(request, obj, "change" if change else "create", {"fields": sorted(form.changed_data)})

    def save_formset(self, request, form, formset, change):
        # Deleted rows lose their primary key when deleted, so record them first.
        for deleted in formset.deleted_forms:
            if deleted.instance.pk is not None:
                self._audit(request, deleted.instance, "delete")
        super().save_formset(request, form, formset, change)
        for obj in formset.new_objects:
            self._audit(request, obj, "create")
        for obj, fields in formset.changed_objects:
            self._audit(request, obj, "change", {"fields": sorted(fields)})

    def delete_model(self, request, obj):
        self._audit(request, obj, "delete")
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self._audit(request, obj, "delete")
        super().delete_queryset(request, queryset)


class UUIDSearchMixin:
    """Paste an id into the search box: `uuid_search_fields` match it exactly. (An `=id` search field
    would crash on any term that is not a UUID.)"""

    uuid_search_fields: tuple[str, ...] = ("id",)

    def get_search_results(self, request, queryset, search_term):
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)  # type: ignore[misc]
        try:
            value = uuid.UUID(search_term.strip())
        except ValueError:
            return results, may_have_duplicates
        exact = Q()
        for field in self.uuid_search_fields:
            exact |= Q(**{field: value})
        return results | queryset.filter(exact), may_have_duplicates


class ReadOnlyAdmin(admin.ModelAdmin):
    """A ledger: it can be searched and read, never added to, changed or deleted from the console."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


# ------------------------------------------------------------------ people


def _is_last_active_owner(membership: Membership) -> bool:
    """An organization always keeps one active owner; the console may not take away the last one."""
    if membership.pk is None or membership.role != Role.OWNER or membership.is_suspended:
        return False
    return not (
        Membership.objects.filter(organization_id=membership.organization_id, role=Role.OWNER, is_suspended=False)
        .exclude(pk=membership.pk)
        .exists()
    )


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ("organization", "user", "role", "is_suspended")

    def clean(self):
        cleaned = super().clean()
        stored = Membership.objects.filter(pk=self.instance.pk).first() if self.instance.pk else None
        loses_owner = cleaned.get("role") != Role.OWNER or cleaned.get("is_suspended")
        if stored is not None and loses_owner and _is_last_active_owner(stored):
            raise forms.ValidationError("This is the organization's last active owner: make someone else owner first.")
        return cleaned


class ConsoleUserCreationForm(AdminUserCreationForm):
    class Meta:
        model = User
        fields = ("email",)


class ConsoleUserChangeForm(UserChangeForm):
    class Meta:
        model = User
        fields = "__all__"


class MembershipOfUserInline(admin.TabularInline):
    model = Membership
    fk_name = "user"
    extra = 0
    fields = ("organization", "role", "is_suspended", "created_at")
    readonly_fields = ("organization", "role", "is_suspended", "created_at")
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("organization")


@admin.register(User)
class UserAdmin(AuditedAdmin, BaseUserAdmin):
    form = ConsoleUserChangeForm
    add_form = ConsoleUserCreationForm
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Personal info", {"fields": ("display_name", "first_name", "last_name")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Important dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("email", "usable_password", "password1", "password2")}),
    )
    list_display = ("email", "display_name", "organizations", "is_staff", "is_active", "last_login", "date_joined")
    list_filter = ("is_staff", "is_superuser", "is_active")
    search_fields = ("email", "display_name", "first_name", "last_name")
    ordering = ("email",)
    readonly_fields = ("last_login", "date_joined")
    inlines = [MembershipOfUserInline]

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_organizations=Count("memberships"))

    @admin.display(description="organizations", ordering="_organizations")
    def organizations(self, obj: User) -> str:
        return changelist_link(Membership, obj._organizations, user__id__exact=obj.pk)  # type: ignore[attr-defined]


# ------------------------------------------------------------------ organizations


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipForm
    extra = 0
    fields = ("user", "role", "is_suspended", "created_at")
    readonly_fields = ("created_at",)
    autocomplete_fields = ("user",)
    show_change_link = True

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("user")


@admin.register(Organization)
class OrganizationAdmin(AuditedAdmin):
    list_display = ("name", "slug", "members", "budget", "spend_this_month", "budget_used", "created_at")
    search_fields = ("name", "slug")
    readonly_fields = ("id", "created_at", "spend_this_month", "related")
    fields = ("id", "name", "slug", "monthly_budget_usd", "spend_this_month", "related", "created_at")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]

    def get_prepopulated_fields(self, request, obj=None):
        return {} if obj else self.prepopulated_fields

    def get_queryset(self, request) -> QuerySet[Organization]:
        SpendEntry = apps.get_model("governance", "SpendEntry")  # noqa: N806 - by label: the kernel imports no app

        # A subquery, not a join: summing over a join with memberships would multiply the spend.
        spend = (
            SpendEntry.objects.filter(organization=OuterRef("pk"), created_at__gte=month_start())
            .order_by()
            .values("organization")
            .annotate(total=Sum("cost_usd"))
            .values("total")
        )
        money = DecimalField(max_digits=14, decimal_places=8)
        return (
            super()
            .get_queryset(request)
            .annotate(
                _spend=Coalesce(Subquery(spend, output_field=money), Value(Decimal("0")), output_field=money),
                _members=Count("memberships", distinct=True),
            )
        )

    @admin.display(description="members", ordering="_members")
    def members(self, obj: Organization) -> str:
        return changelist_link(Membership, obj._members, organization__id__exact=obj.pk)  # type: ignore[attr-defined]

    @admin.display(description="monthly budget (USD)", ordering="monthly_budget_usd")
    def budget(self, obj: Organization) -> str:
        return "uncapped" if obj.monthly_budget_usd is None else f"{obj.monthly_budget_usd:.2f}"

    @admin.display(description="spend this month (USD)", ordering="_spend")
    def spend_this_month(self, obj: Organization) -> str:
        spend = getattr(obj, "_spend", None)
        if spend is None:  # the change form of an unsaved organization
            return "–"
        return changelist_link(
            apps.get_model("governance", "SpendEntry"),
            f"{spend:.4f}",
            organization__id__exact=obj.pk,
            created_at__gte=month_start().isoformat(),
        )

    @admin.display(description="budget used")
    def budget_used(self, obj: Organization) -> str:
        budget = obj.monthly_budget_usd
        if not budget:
            return "–"
        return f"{obj._spend / budget * 100:.0f}%"  # type: ignore[attr-defined]

    @admin.display(description="related")
    def related(self, obj: Organization) -> str:
        if obj.pk is None:
            return "–"
        # By label: the kernel's admin links to what the apps hang off an organization without importing them.
        links = [
            changelist_link(model, label, organization__id__exact=obj.pk)
            for model, label in (
                (apps.get_model("agents", "Agent"), "agents"),
                (apps.get_model("agents", "Run"), "runs"),
                (Secret, "secrets"),
                (ApiKey, "API keys"),
                (AuditEvent, "audit log"),
            )
        ]
        return format_html(" · ".join(["{}"] * len(links)), *links)


# ------------------------------------------------------------------ memberships


@admin.register(Membership)
class MembershipAdmin(AuditedAdmin):
    form = MembershipForm
    list_display = ("user_link", "organization_link", "role", "is_suspended", "created_at")
    list_filter = ("role", "is_suspended", "organization")
    search_fields = ("user__email", "user__display_name", "organization__name", "organization__slug")
    list_select_related = ("user", "organization")
    autocomplete_fields = ("user", "organization")
    readonly_fields = ("created_at",)
    actions = ["suspend", "unsuspend"]

    def has_delete_permission(self, request, obj=None) -> bool:
        if isinstance(obj, Membership) and _is_last_active_owner(obj):
            return False
        return super().has_delete_permission(request, obj)

    def delete_queryset(self, request, queryset):
        # One by one, so deleting two owners of one organization together cannot remove both.
        kept = 0
        for membership in queryset.select_related("user", "organization"):
            if _is_last_active_owner(membership):
                kept += 1
                continue
            self.delete_model(request, membership)
        if kept:
            self.message_user(
                request, f"Kept {kept} membership(s): an organization must keep one active owner.", messages.WARNING
            )

    @admin.display(description="user", ordering="user__email")
    def user_link(self, obj: Membership) -> str:
        return admin_link(obj.user)

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Membership) -> str:
        return admin_link(obj.organization)

    @admin.action(description="Suspend selected members", permissions=["change"])
    def suspend(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        done = skipped = 0
        with transaction.atomic():
            for membership in queryset.select_related("user", "organization").select_for_update(of=("self",)):
                if membership.is_suspended:
                    continue
                if _is_last_active_owner(membership):
                    skipped += 1
                    continue
                membership.is_suspended = True
                membership.save(update_fields=["is_suspended"])
                self._audit(request, membership, "suspend", {"user": membership.user.email})
                done += 1
        self.message_user(request, f"Suspended {done} member(s).", messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"Kept {skipped} member(s) active: an organization must keep one active owner.",
                messages.WARNING,
            )

    @admin.action(description="Unsuspend selected members", permissions=["change"])
    def unsuspend(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        done = 0
        with transaction.atomic():
            for membership in queryset.filter(is_suspended=True).select_related("user", "organization"):
                membership.is_suspended = False
                membership.save(update_fields=["is_suspended"])
                self._audit(request, membership, "unsuspend", {"user": membership.user.email})
                done += 1
        self.message_user(request, f"Unsuspended {done} member(s).", messages.SUCCESS)


@admin.register(Invitation)
class InvitationAdmin(AuditedAdmin):
    list_display = ("email", "organization_link", "role", "invited_by_link", "created_at", "accepted_at")
    list_filter = ("role", "organization")
    search_fields = ("email", "organization__name")
    list_select_related = ("organization", "invited_by")
    # Invitations are minted by the members service (the token is mailed once); the console reads
    # and withdraws them.
    fields = ("email", "organization", "role", "invited_by", "created_at", "accepted_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Invitation) -> str:
        return admin_link(obj.organization)

    @admin.display(description="invited by")
    def invited_by_link(self, obj: Invitation) -> str:
        return admin_link(obj.invited_by)


# ------------------------------------------------------------------ API keys


class ActiveKeyFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("active", "Active"), ("revoked", "Revoked")]

    def queryset(self, request, queryset):
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(AuditedAdmin):
    list_display = ("name", "prefix", "user_link", "organization_link", "active", "created_at", "last_used_at", "revoked_at")
    list_filter = (ActiveKeyFilter, "organization")
    search_fields = ("name", "prefix", "user__email", "organization__name")
    list_select_related = ("user", "organization")
    # The hash stays out of the console; keys are minted where the token can be shown once (API, bootstrap).
    fields = ("name", "prefix", "user", "organization", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    actions = ["revoke"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="active", boolean=True)
    def active(self, obj: ApiKey) -> bool:
        return obj.is_active

    @admin.display(description="user", ordering="user__email")
    def user_link(self, obj: ApiKey) -> str:
        return admin_link(obj.user)

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: ApiKey) -> str:
        return admin_link(obj.organization)

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        now = timezone.now()
        done = 0
        with transaction.atomic():
            for key in queryset.filter(revoked_at__isnull=True).select_related("organization", "user"):
                key.revoked_at = now
                key.save(update_fields=["revoked_at"])
                self._audit(request, key, "revoke", {"prefix": key.prefix})
                done += 1
        self.message_user(request, f"Revoked {done} API key(s).", messages.SUCCESS)


# ------------------------------------------------------------------ the vault


class SecretCreationForm(forms.ModelForm):
    """The value goes in, never comes out: a write-only password field sealed with the vault on save."""

    value = forms.CharField(
        label="Value",
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: sealed for this organization on save and never shown again.",
    )

    class Meta:
        model = Secret
        fields = ("organization", "name", "kind", "description")

    def save(self, commit: bool = True) -> Secret:
        secret = super().save(commit=False)
        sealed = vault.seal(secret.organization_id, self.cleaned_data["value"])
        secret.key_version = sealed.key_version
        secret.wrapped_key = sealed.wrapped_key
        secret.ciphertext = sealed.ciphertext
        secret.hint = sealed.hint
        if commit:
            secret.save()
        return secret


class SecretChangeForm(forms.ModelForm):
    class Meta:
        model = Secret
        fields = ("name", "kind", "description")


@admin.register(Secret)
class SecretAdmin(UUIDSearchMixin, AuditedAdmin):
    """No value is ever shown, not even masked. A new value is typed once on the add form; rotating
    goes through the secrets API (`rotate_secret`), which re-seals it."""

    list_display = ("name", "organization_link", "kind", "hint_display", "key_version", "created_by_link", "created_at", "rotated_at")
    list_filter = ("kind", "key_version", "organization")
    search_fields = ("name", "description", "organization__name")
    list_select_related = ("organization", "created_by")
    autocomplete_fields = ("organization",)
    # The organization id is bound into the ciphertext: moving a secret would make it unreadable.
    readonly_fields = ("organization", "hint_display", "key_version", "created_by", "created_at", "rotated_at")

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = SecretChangeForm if obj is not None else SecretCreationForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["organization", "name", "kind", "description", "value"]
        return ["organization", "name", "kind", "description", "hint_display", "key_version", "created_by", "created_at", "rotated_at"]

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    @admin.display(description="hint")
    def hint_display(self, obj: Secret) -> str:
        return f"…{obj.hint}" if obj.hint else "–"

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Secret) -> str:
        return admin_link(obj.organization)

    @admin.display(description="created by")
    def created_by_link(self, obj: Secret) -> str:
        return admin_link(obj.created_by)


# ------------------------------------------------------------------ the audit log


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "action", "actor_display", "organization_link", "target_type", "target_name", "ip_address")
    list_filter = ("target_type", "organization", "created_at")
    search_fields = ("action", "actor_label", "target_name", "target_id")
    list_select_related = ("actor", "organization")
    date_hierarchy = "created_at"
    fields = (
        "created_at", "action", "actor", "actor_label", "organization",
        "target_type", "target_id", "target_name", "details", "ip_address",
    )

    @admin.display(description="actor", ordering="actor_label")
    def actor_display(self, obj: AuditEvent) -> str:
        return admin_link(obj.actor, obj.actor_label) if obj.actor else (obj.actor_label or "system")

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: AuditEvent) -> str:
        return admin_link(obj.organization)


__all__ = [
    "AuditedAdmin",
    "ReadOnlyAdmin",
    "UUIDSearchMixin",
    "admin_link",
    "admin_url",
    "changelist_link",
    "month_start",
]


# ------------------------------------------------------------------ shared by the apps' admins


def url_without_query(url: str) -> str:
    """The URL as an operator may see it: a query string can carry a key, so it is marked, never shown."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unreadable URL)"
    query = "[query hidden]" if parts.query else ""
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, query, ""))


class ReadAndDeleteAdmin(UUIDSearchMixin, AuditedAdmin):
    """Shown, searched and deletable (audited); never added or edited here."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: Any) -> str:
        return admin_link(obj.organization)

    @admin.display(description="created by")
    def created_by_link(self, obj: Any) -> str:
        return admin_link(obj.created_by)
