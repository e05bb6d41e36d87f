"""Settings: profile, chat accounts, API keys, secrets, model profiles, members and roles, budget, data retention.

Same services and permissions as the REST API (agenticos/api.py, agents/api.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos import services as kernel
from agenticos.errors import Conflict, Invalid
from agenticos.models import ApiKey, Invitation, Membership, Organization, Secret, SecretKind
from agenticos.permissions import KeyScope, Role
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get, org_queryset, sees_deployment_settings
from agents import services as agent_services
from agents.models import ModelProfile, Provider
from channelbots import services as bot_services
from channelbots.models import ChannelIdentity
from console import selectors
from console.base import console_view, post_form, problems_by_field, screen
from governance import retention
from identity.roles import role_choices

# A model profile's key picker: API keys (and custom values, for gateways that take another header), never an embed's
# JWT secret or a bot token.
MODEL_KEY_KINDS = (SecretKind.API_KEY, SecretKind.CUSTOM)


def _page(request: HttpRequest, template: str, tab: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    actor = getattr(request, "actor", None)
    can_retention = actor is not None and retention.may_manage_retention(actor)
    return screen(request, template, {"nav": "settings", "tab": tab, "can_retention": can_retention, **context},
                  status=status)


@console_view()
def profile(request: HttpRequest, actor: Actor) -> HttpResponse:
    if request.method == "POST":
        kernel.update_profile(actor=actor, display_name=request.POST.get("display_name", ""))
        if "theme" in request.POST and actor.user is not None:
            try:
                kernel.set_theme(user=actor.user, theme=request.POST["theme"])
            except Invalid as exc:
                messages.error(request, exc.message)
                return redirect("console:settings")
        messages.success(request, _("Profile saved."))
        return redirect("console:settings")
    return _page(request, "console/settings/profile.html", "profile", {})


@require_POST
@console_view()
def theme(request: HttpRequest, actor: Actor) -> HttpResponse:
    """The header's theme toggle remembers the choice for the person (theme.js posts it), so every browser they sign
    in from opens in it."""
    user = actor.user
    assert user is not None  # console pages are a person's (console_view signs in)
    try:
        kernel.set_theme(user=user, theme=request.POST.get("theme", ""))
    except Invalid as exc:
        return JsonResponse({"error": {"code": "invalid", "message": exc.message}}, status=422)
    return JsonResponse({"theme": user.theme})


@console_view()
def chat_accounts(request: HttpRequest, actor: Actor) -> HttpResponse:
    """The caller's own linked Slack / Telegram / Mattermost accounts (as GET /api/v1/chat-accounts)."""
    rows = org_queryset(actor, ChannelIdentity).filter(user=actor.user).order_by("platform", "display_name")
    return _page(request, "console/settings/chat_accounts.html", "chat_accounts", {"identities": rows})


@require_POST
@console_view()
def disconnect_chat_account(request: HttpRequest, actor: Actor, identity_id: int) -> HttpResponse:
    identity = org_get(actor, ChannelIdentity, identity_id,
                       queryset=org_queryset(actor, ChannelIdentity).filter(user=actor.user))
    bot_services.disconnect_identity(actor=actor, identity=identity, ip_address=request.META.get("REMOTE_ADDR"))
    messages.success(request, _("The chat account was disconnected: the bot no longer knows it as you."))
    return redirect("console:settings-chat-accounts")


# ------------------------------------------------------------------ API keys


API_KEYS_PER_PAGE = 25
# The expiry choices the form offers, in days (0: never).
KEY_LIFETIMES = (30, 90, 365, 0)


@console_view("apikeys:manage")
def api_keys(request: HttpRequest, actor: Actor) -> HttpResponse:
    errors: dict[str, str] = {}
    raw_key = None
    form = {"name": "", "scope": KeyScope.RUN, "lifetime": "90"}
    if request.method == "POST":
        form = {key: request.POST.get(key, default).strip() for key, default in form.items()}
        try:
            _key, raw_key = kernel.create_api_key(
                actor=actor, name=form["name"], scope=form["scope"], expires_at=_key_expiry(form["lifetime"]))
            form = {"name": "", "scope": KeyScope.RUN, "lifetime": "90"}
        except Invalid as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    search = request.GET.get("q", "").strip()
    keys = kernel.search_api_keys(kernel.api_keys_for(actor), search).order_by("-created_at", "-pk")
    page = Paginator(keys, API_KEYS_PER_PAGE).get_page(request.GET.get("page"))
    lifetimes = [(str(days), _("%(days)s days") % {"days": days} if days else _("Never expires"))
                 for days in KEY_LIFETIMES]
    return _page(request, "console/settings/api_keys.html", "api_keys", {
        "page": page, "keys": page.object_list, "search": search, "raw_key": raw_key, "errors": errors,
        "form": form, "scopes": KeyScope.choices, "lifetimes": lifetimes, "now": timezone.now(),
    }, status=422 if errors else 200)


def _key_expiry(lifetime: str) -> datetime | None:
    """The moment a key made now with `lifetime` days expires (None: never); an unknown choice is a 422."""
    if lifetime in ("", "0"):
        return None
    if not digits_only(lifetime) or int(lifetime) not in KEY_LIFETIMES:
        raise Invalid(_("Choose one of the offered expiries."), details={"field": "lifetime"})
    return timezone.now() + timedelta(days=int(lifetime))


@require_POST
@console_view("apikeys:manage")
def revoke_api_key(request: HttpRequest, actor: Actor, key_id: int) -> HttpResponse:
    key = org_get(actor, ApiKey, key_id, queryset=kernel.api_keys_for(actor))
    kernel.revoke_api_key(actor=actor, api_key=key)
    messages.success(request, _("The key was revoked."))
    return redirect("console:settings-api-keys")


# ------------------------------------------------------------------ secrets


@console_view("secrets:view")
def secrets(request: HttpRequest, actor: Actor) -> HttpResponse:
    errors: dict[str, str] = {}
    if request.method == "POST":
        try:
            kernel.create_secret(actor=actor, name=request.POST.get("name", ""), value=request.POST.get("value", ""),
                                 kind=request.POST.get("kind", SecretKind.API_KEY),
                                 description=request.POST.get("description", ""))
            messages.success(request, _("The secret was sealed in the vault."))
            return redirect("console:settings-secrets")
        except (Invalid, Conflict) as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    rows = list(org_queryset(actor, Secret).defer("wrapped_key", "ciphertext").select_related("created_by"))
    reserved = kernel.reserved_secret_ids(actor.organization.pk)
    for row in rows:
        row.managed_by_deployment = row.pk in reserved  # type: ignore[attr-defined]
    return _page(request, "console/settings/secrets.html", "secrets",
                 {"secrets": rows, "kinds": SecretKind.choices, "errors": errors}, status=422 if errors else 200)


@require_POST
@console_view("secrets:manage")
def rotate_secret(request: HttpRequest, actor: Actor, secret_id: Any) -> HttpResponse:
    secret = org_get(actor, Secret, secret_id)
    try:
        kernel.rotate_secret(actor=actor, secret=secret, value=request.POST.get("value", ""))
        messages.success(request, _("The secret was rotated."))
    except (Invalid, Conflict) as exc:
        # The value's own reason (a sign-in file that is not one says which field it lacks), else the summary.
        messages.error(request, (problems_by_field(exc) or {}).get("value") or exc.message)
    return redirect("console:settings-secrets")


@require_POST
@console_view("secrets:manage")
def delete_secret(request: HttpRequest, actor: Actor, secret_id: Any) -> HttpResponse:
    secret = org_get(actor, Secret, secret_id)
    try:
        kernel.delete_secret(actor=actor, secret=secret)
        messages.success(request, _("The secret was deleted."))
    except Conflict as exc:
        messages.error(request, exc.message)
    return redirect("console:settings-secrets")


# ------------------------------------------------------------------ model profiles


@console_view("agents:view")
def model_profiles(request: HttpRequest, actor: Actor) -> HttpResponse:
    errors: dict[str, str] = {}
    if request.method == "POST":
        try:
            if request.POST.get("delete"):
                profile = org_get(actor, ModelProfile, request.POST["delete"])
                agent_services.delete_model_profile(actor=actor, profile=profile)
                messages.success(request, _("The model profile was deleted."))
            else:
                with transaction.atomic():  # a key typed with a refused profile is not kept either
                    label = request.POST.get("label", "")
                    profile = agent_services.create_model_profile(
                        actor=actor, label=label, provider=request.POST.get("provider", ""),
                        model=request.POST.get("model", ""), kind=request.POST.get("kind", ModelProfile.Kind.CHAT),
                        secret_id=_typed_key(actor, request, label) or request.POST.get("secret_id") or None,
                        base_url=request.POST.get("base_url", ""),
                    )
                messages.success(request, _("The model profile was created: test its connection."))
                return redirect("console:settings-model", profile_id=profile.pk)
            return redirect("console:settings-models")
        except (Invalid, Conflict) as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    profiles = org_queryset(actor, ModelProfile).select_related("secret")
    secrets_list = kernel.pickable_secrets(actor, kinds=MODEL_KEY_KINDS)
    return _page(request, "console/settings/models.html", "models", {
        "profiles": profiles, "providers": Provider.choices, "kinds": ModelProfile.Kind.choices, "secrets": secrets_list,
        "errors": errors,
    }, status=422 if errors else 200)


@console_view("models:manage")
def edit_model_profile(request: HttpRequest, actor: Actor, profile_id: Any) -> HttpResponse:
    """Change a profile (the service PATCH /api/v1/model-profiles/<id> calls, with its permission)."""
    profile = org_get(actor, ModelProfile, profile_id, queryset=org_queryset(actor, ModelProfile).select_related("secret"))
    errors: dict[str, str] = {}
    form = {"label": profile.label, "provider": profile.provider, "model": profile.model,
            "secret_id": str(profile.secret_id or ""), "base_url": profile.base_url,
            "context_window": "" if profile.context_window is None else str(profile.context_window)}
    if request.method == "POST":
        form = {key: request.POST.get(key, "").strip() for key in form}
        changes: dict[str, Any] = {key: form[key] for key in ("label", "provider", "model", "base_url")}
        changes["secret_id"] = form["secret_id"] or None
        window = form["context_window"]
        # A typed non-number goes to the service as is, so its message names the field.
        changes["context_window"] = int(window) if digits_only(window) else (window or None)
        try:
            with transaction.atomic():
                changes["secret_id"] = _typed_key(actor, request, form["label"]) or changes["secret_id"]
                agent_services.update_model_profile(actor=actor, profile=profile, **changes)
            messages.success(request, _("The model profile was saved."))
            return redirect("console:settings-models")
        except (Invalid, Conflict) as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    return _edit_page(request, actor, profile, form, errors)


def _edit_page(request: HttpRequest, actor: Actor, profile: ModelProfile, form: dict[str, str],
               errors: dict[str, str], check: Any = None) -> HttpResponse:
    secrets_list = kernel.pickable_secrets(actor, kinds=MODEL_KEY_KINDS)
    return _page(request, "console/settings/model_edit.html", "models", {
        "profile": profile, "form": form, "providers": Provider.choices, "secrets": secrets_list, "errors": errors,
        "check": check,
    }, status=422 if errors else 200)


def _typed_key(actor: Actor, request: HttpRequest, label: str) -> str | None:
    """The id of the key typed in the form's password field, sealed in the vault now; None when none was typed
    (the vault picker then decides)."""
    value = (request.POST.get("api_key") or "").strip()
    if not value:
        return None
    return str(agent_services.seal_profile_key(actor=actor, label=label, value=value).pk)


@post_form("console:settings-model")
@console_view("models:manage")
def test_model_profile(request: HttpRequest, actor: Actor, profile_id: Any) -> HttpResponse:
    """Test connection: one real request to the saved profile's model, and the provider's model list."""
    from agents.model_check import check_connection

    profile = org_get(actor, ModelProfile, profile_id, queryset=org_queryset(actor, ModelProfile).select_related("secret"))
    form = {"label": profile.label, "provider": profile.provider, "model": profile.model,
            "secret_id": str(profile.secret_id or ""), "base_url": profile.base_url,
            "context_window": "" if profile.context_window is None else str(profile.context_window)}
    check = check_connection(profile)
    if not sees_deployment_settings(actor):
        check.hint = ""  # a member's refusal is plain; the setting's name is for owners, admins and staff
    return _edit_page(request, actor, profile, form, {}, check=check)


# ------------------------------------------------------------------ members


@console_view()
def members(request: HttpRequest, actor: Actor) -> HttpResponse:
    errors: dict[str, str] = {}
    if request.method == "POST":
        try:
            kernel.invite_member(actor=actor, email=request.POST.get("email", ""),
                                 role=request.POST.get("role", Role.MEMBER))
            messages.success(request, _("The invitation was sent."))
            return redirect("console:settings-members")
        except (Invalid, Conflict) as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    rows = org_queryset(actor, Membership).select_related("user").order_by("user__email")
    invitations = (org_queryset(actor, Invitation).filter(accepted_at__isnull=True).select_related("invited_by")
                   if actor.has("members:manage") else [])
    return _page(request, "console/settings/members.html", "members", {
        "memberships": rows, "invitations": invitations, "roles": role_choices(actor.organization.pk),
        "errors": errors,
    }, status=422 if errors else 200)


@require_POST
@console_view()
def change_member(request: HttpRequest, actor: Actor, membership_id: int) -> HttpResponse:
    membership = org_get(actor, Membership, membership_id, queryset=org_queryset(actor, Membership).select_related("user"))
    action = request.POST.get("action", "role")
    try:
        if action == "remove":
            kernel.remove_member(actor=actor, membership=membership)
        elif action in ("suspend", "reinstate"):
            kernel.set_member_suspended(actor=actor, membership=membership, suspended=action == "suspend")
        else:
            kernel.change_member_role(actor=actor, membership=membership, role=request.POST.get("role", ""))
        messages.success(request, _("Saved."))
    except (Invalid, Conflict) as exc:
        messages.error(request, exc.message)
    return redirect("console:settings-members")


# ------------------------------------------------------------------ budget


class BudgetForm(forms.Form):
    # The column's own form field (12 digits, 4 places): NaN, Infinity and 1e308 are form errors here, not a
    # comparison that raises or an insert that overflows.
    monthly_usd = Organization._meta.get_field("monthly_budget_usd").formfield(required=False, min_value=0)


@console_view()
def budget(request: HttpRequest, actor: Actor) -> HttpResponse:
    errors: dict[str, str] = {}
    if request.method == "POST":
        actor.require("budgets:manage")  # the role decides before the amount is read
        form = BudgetForm(request.POST)
        if not form.is_valid():
            errors = {name: " ".join(str(text) for text in texts) for name, texts in form.errors.items()}
        else:
            amount = form.cleaned_data["monthly_usd"]
            try:
                kernel.set_organization_budget(actor=actor, monthly_usd="" if amount is None else str(amount))
                messages.success(request, _("The budget was saved."))
                return redirect("console:settings-budget")
            except Invalid as exc:
                errors = problems_by_field(exc)
    return _page(request, "console/settings/budget.html", "budget", {
        "org_budget": selectors.organization_budget(actor), "errors": errors,
    }, status=422 if errors else 200)


# ------------------------------------------------------------------ data retention


@console_view()
def data_retention(request: HttpRequest, actor: Actor) -> HttpResponse:
    """The organization's retention values (owner only): each field's value in force, whether it is the
    organization's or the deployment default; empty = the default, 0 = keep (governance.retention)."""
    retention.require_retention_owner(actor)  # the role decides before anything is read or shown
    values = retention.effective_values(actor.organization)
    form = {row.field: "" if row.override is None else str(row.override) for row in values}
    errors: dict[str, str] = {}
    if request.method == "POST":
        form = {field: request.POST.get(field, "").strip() for field in form}
        try:
            retention.update_retention(actor=actor, values=dict(form), ip_address=request.META.get("REMOTE_ADDR"))
            messages.success(request, _("The retention values were saved."))
            return redirect("console:settings-retention")
        except Invalid as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    rows = [{"knob": row.knob, "field": row.field, "days": row.days, "source": row.source, "default": row.default,
             "form_value": form[row.field], "error": errors.get(row.field, "")} for row in values]
    return _page(request, "console/settings/retention.html", "retention", {"rows": rows, "errors": errors},
                 status=422 if errors else 200)
