"""The operator's view of sign-in: each organization's IdP (the client secret typed once, sealed, never shown),
its domains (verified by hand after the operator checked ownership), and people's browser sessions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agenticos import vault
from agenticos.admin import AuditedAdmin, admin_link
from agenticos.errors import DomainError
from identity import services
from identity.models import CustomRole, OidcConnection, SignInPolicy, UserSession, VerifiedDomain


class OidcConnectionForm(forms.ModelForm):
    client_secret = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False),
        help_text="OpenID Connect: typed once and sealed in the vault; leave empty to keep the current one.")
    saml_metadata_xml = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4}), label="SAML metadata XML",
        help_text="SAML 2.0: the IdP's metadata, pasted (or give its metadata URL); empty keeps what was read.")

    class Meta:
        model = OidcConnection
        fields = ["organization", "slug", "protocol", "display_name", "issuer_url", "client_id",
                  "saml_metadata_url", "enabled", "require_sso", "break_glass_user", "default_role", "role_claim",
                  "role_map"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("protocol") == OidcConnection.SAML:
            self._clean_saml(cleaned)
            return cleaned
        if self.instance.pk is None and not cleaned.get("client_secret"):
            self.add_error("client_secret", "A new connection needs its client secret.")
        issuer = cleaned.get("issuer_url")
        if issuer and not self.errors:
            try:
                services.check_issuer(issuer)
            except DomainError as exc:
                self.add_error("issuer_url", exc.message)
        if not issuer:
            self.add_error("issuer_url", "An OpenID Connect connection needs its issuer.")
        return cleaned

    def _clean_saml(self, cleaned: dict[str, Any]) -> None:
        """The IdP's metadata, read through the outbound guard like the owner's form does (identity.services)."""
        url, xml = cleaned.get("saml_metadata_url") or "", cleaned.get("saml_metadata_xml") or ""
        if self.instance.pk and self.instance.saml_entity_id and not xml and url == self.instance.saml_metadata_url:
            return  # the IdP did not change
        try:
            found = services.read_saml_metadata(url, xml)
        except DomainError as exc:
            problems = (exc.details or {}).get("problems") or [{"field": "saml_metadata_url", "message": exc.message}]
            for problem in problems:
                field = problem["field"] if problem["field"] in self.fields else "saml_metadata_url"
                self.add_error(field, problem["message"])
            return
        self.instance.saml_entity_id, self.instance.saml_sso_url = found["entity_id"], found["sso_url"]
        self.instance.saml_idp_cert = found["cert"]


@admin.register(OidcConnection)
class OidcConnectionAdmin(AuditedAdmin):
    form = OidcConnectionForm
    list_display = ("display_name", "organization_link", "protocol", "issuer_url", "enabled", "require_sso", "secret_display",
                    "updated_at")
    list_filter = ("protocol", "enabled", "require_sso")
    search_fields = ("display_name", "slug", "issuer_url", "organization__name")
    list_select_related = ("organization",)
    autocomplete_fields = ("organization", "break_glass_user")
    readonly_fields = ("secret_display", "key_version", "saml_entity_id", "saml_sso_url", "saml_sp_cert",
                       "created_at", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: OidcConnection | None = None) -> Any:
        # The organization id is bound into the sealed secret: it never moves to another organization.
        return (*self.readonly_fields, "organization") if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: OidcConnection, form: Any, change: bool) -> None:
        secret = form.cleaned_data.get("client_secret")
        if obj.protocol == OidcConnection.SAML:
            if not obj.saml_sp_cert:
                services.give_saml_sp_key(obj)
        elif secret:
            sealed = vault.seal(obj.organization_id, secret)
            obj.key_version, obj.wrapped_key, obj.ciphertext = sealed.key_version, sealed.wrapped_key, sealed.ciphertext
            obj.secret_hint = sealed.hint
        super().save_model(request, obj, form, change)

    @admin.display(description="client secret")
    def secret_display(self, obj: OidcConnection) -> str:
        if obj.protocol == OidcConnection.SAML:
            return "SP private key sealed"
        return f"sealed (…{obj.secret_hint})" if obj.secret_hint else "sealed"

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: OidcConnection) -> str:
        return admin_link(obj.organization)


@admin.register(VerifiedDomain)
class VerifiedDomainAdmin(AuditedAdmin):
    list_display = ("domain", "organization_link", "verified_at", "created_at")
    list_filter = (("verified_at", admin.EmptyFieldListFilter),)
    search_fields = ("domain", "organization__name")
    list_select_related = ("organization",)
    autocomplete_fields = ("organization",)
    readonly_fields = ("token", "verified_at", "created_at")
    actions = ["mark_verified"]

    @admin.action(description="Mark verified (ownership checked by the operator)")
    def mark_verified(self, request: HttpRequest, queryset: QuerySet[VerifiedDomain]) -> None:
        for domain in queryset.filter(verified_at__isnull=True).select_related("organization"):
            try:
                services.operator_verify_domain(operator=request.user, domain=domain)  # type: ignore[arg-type]
            except DomainError as exc:
                self.message_user(request, f"{domain.domain}: {exc.message}", messages.ERROR)

    def save_model(self, request: HttpRequest, obj: VerifiedDomain, form: Any, change: bool) -> None:
        if not obj.token:
            import secrets

            obj.token = secrets.token_urlsafe(24)
        super().save_model(request, obj, form, change)

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: VerifiedDomain) -> str:
        return admin_link(obj.organization)


@admin.register(UserSession)
class UserSessionAdmin(admin.ModelAdmin):
    list_display = ("user", "method", "ip_address", "created_at")
    list_filter = ("method",)
    search_fields = ("user__email", "ip_address")
    list_select_related = ("user",)
    readonly_fields = ("user", "session_key", "method", "ip_address", "user_agent", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(SignInPolicy)
class SignInPolicyAdmin(AuditedAdmin):
    list_display = ("organization_link", "require_mfa", "updated_at")
    list_filter = ("require_mfa",)
    search_fields = ("organization__name",)
    list_select_related = ("organization",)
    autocomplete_fields = ("organization",)

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: SignInPolicy) -> str:
        return admin_link(obj.organization)


@admin.register(CustomRole)
class CustomRoleAdmin(AuditedAdmin):
    list_display = ("name", "organization_link", "permission_count", "updated_at")
    search_fields = ("name", "organization__name")
    list_select_related = ("organization",)
    autocomplete_fields = ("organization",)

    @admin.display(description="permissions")
    def permission_count(self, obj: CustomRole) -> int:
        return len(obj.permissions)

    @admin.display(description="organization", ordering="organization__name")
    def organization_link(self, obj: CustomRole) -> str:
        return admin_link(obj.organization)
