"""Signing in, and Settings → Sign-in and Sessions.

The sign-in page sends `ada@acme.com` to Acme's identity provider when acme.com is a verified domain of an
organization with single sign-on (always when the organization requires it; on the SSO button otherwise), and
signs in with a password otherwise (identity.backends refuses it for members of an organization that requires SSO).
"""

from __future__ import annotations

import json
from typing import Any

from allauth.mfa.adapter import get_adapter as get_mfa_adapter
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login as auth_login
from django.contrib.auth import views as auth_views
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agenticos.errors import Conflict, Invalid
from agenticos.models import Membership, User
from agenticos.permissions import PERMISSIONS, Role
from agenticos.strings import digits_only
from agenticos.tenancy import Actor, org_get, org_queryset
from console.base import console_view, problems_by_field, screen
from console.settings_views import _page
from identity import api as identity_api
from identity import (
    attempts,
    audit_log,
    audit_stream,
    mfa,
    oidc,
    provisioning,
    roles,
    saml,
    services,
    sessions,
)
from identity.models import AuditStream, CustomRole, OidcConnection, ScimToken, VerifiedDomain


class SignInView(auth_views.LoginView):
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "passkey_login": mfa.passkey_login_enabled()}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        email = request.POST.get("username", "")
        connection = services.connection_for_email(email)
        asked_sso = "sso" in request.POST
        if connection is not None:
            if asked_sso or not request.POST.get("password"):
                return self._to_provider(request, connection)
            if connection.require_sso and not self._break_glass(connection, email):
                return self._to_provider(request, connection)  # the password is never even checked
        elif asked_sso:
            form = self.get_form()
            form.is_valid()
            form.add_error(None, _("No single sign-on is set up for this e-mail address's domain."))
            return self.form_invalid(form)
        retry_after = attempts.refused(request, attempts.SIGN_IN_FORM, person=email)
        if retry_after is not None:
            return self.refused(retry_after, email)  # the password is not checked
        return super().post(request, *args, **kwargs)

    def refused(self, retry_after: int, email: str = "") -> HttpResponse:
        """The sign-in page again, saying the attempt was refused (an unbound form: validating it would
        authenticate), with 429 and Retry-After."""
        form = self.form_class(self.request, initial={"username": email})
        context = self.get_context_data(form=form, refused=attempts.message(retry_after))
        return _throttled(self.render_to_response(context), retry_after)

    def form_valid(self, form: Any) -> HttpResponse:
        user = form.get_user()
        if mfa.needs_second_step(user):
            # The password was right; the session starts only after the second factor (identity.mfa).
            mfa.start_second_step(self.request, user)
            next_url = self.get_redirect_url()
            return redirect(f"{reverse('signin:mfa')}?{urlencode({'next': next_url})}" if next_url
                            else reverse("signin:mfa"))
        return super().form_valid(form)

    def form_invalid(self, form: Any) -> HttpResponse:
        if getattr(self.request, "sso_required", False):
            form.errors.pop("__all__", None)
            form.add_error(None, _("Your organization signs in with single sign-on: use the button below."))
        return super().form_invalid(form)

    @staticmethod
    def _break_glass(connection: OidcConnection, email: str) -> bool:
        """Whether `email` is the owner who keeps password sign-in (then a typed password is honoured)."""
        glass = connection.break_glass_user
        return glass is not None and glass.email == (email or "").strip().lower()

    @staticmethod
    def _to_provider(request: HttpRequest, connection: OidcConnection) -> HttpResponse:
        # allauth's own login view starts the flow (state, nonce, PKCE; or the SAML AuthnRequest) and redirects
        # to the IdP.
        if connection.protocol == OidcConnection.SAML:
            return saml.login(request, connection.slug)
        return oidc.login(request, provider_id=connection.slug)


def _throttled(response: HttpResponse, retry_after: int) -> HttpResponse:
    response.status_code = 429
    response["Retry-After"] = str(retry_after)
    return response


def _throttled_json(retry_after: int) -> HttpResponse:
    # The JSON error envelope (agenticos.errors) of a refused attempt, for the pages' WebAuthn fetches.
    return _throttled(JsonResponse({"error": {"code": "rate_limited", "message": attempts.message(retry_after),
                                              "details": {"retry_after": retry_after}}}), retry_after)


def _qr_svg(user: Any, secret: str) -> str:
    """The otpauth:// URI as an inline SVG QR code, drawn by allauth's MFA adapter (no image request)."""
    adapter = get_mfa_adapter()
    return adapter.build_totp_svg(adapter.build_totp_url(user, secret))


def mfa_step(request: HttpRequest) -> HttpResponse:
    """The second step of a password sign-in: a TOTP code or a recovery code (or enrolment, when required)."""
    state = mfa.pending(request)
    user = User.objects.filter(pk=state["user"], is_active=True).first() if state else None
    if state is None or user is None:
        return redirect("console:login")
    error = ""
    retry_after = attempts.refused(request, attempts.SECOND_STEP, person=user.pk) if request.method == "POST" else None
    if retry_after is not None:
        error = attempts.message(retry_after)  # refused before the code or passkey is checked
    elif request.method == "POST":
        if request.POST.get("credential"):
            used = "webauthn" if mfa.check_passkey(user, _json_or_none(request.POST["credential"])) else None
        else:
            used = mfa.check_code(user, request.POST.get("code", ""), enrol_secret=state.get("secret"))
        if used:
            request.session.pop(mfa.PENDING_KEY, None)
            auth_login(request, user, backend=state.get("backend") or None)
            next_url = request.GET.get("next", "")
            if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}, request.is_secure()):
                next_url = settings.LOGIN_REDIRECT_URL
            return redirect(next_url)
        error = _("That code is not right (or was used already).")
        audit_log.sign_in_failed(user, reason="mfa_code", ip_address=request.META.get("REMOTE_ADDR"))
    secret = state.get("secret")
    response = screen(request, "registration/mfa.html", {
        "enrol_secret": secret, "qr_svg": _qr_svg(user, secret) if secret else "", "error": error,
        "has_passkey": mfa.has_passkey(user)}, status=422 if error else 200)
    return _throttled(response, retry_after) if retry_after is not None else response


def _json_or_none(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


@require_POST
def mfa_passkey_options(request: HttpRequest) -> HttpResponse:
    """The second step's WebAuthn request options, for the person half signed in (nobody else has any)."""
    state = mfa.pending(request)
    user = User.objects.filter(pk=state["user"], is_active=True).first() if state else None
    if user is None or not mfa.has_passkey(user):
        return JsonResponse({"error": {"code": "not_found", "message": "No passkey sign-in is pending."}},
                            status=404)
    retry_after = attempts.refused(request, attempts.PASSKEY_OPTIONS, person=user.pk)
    if retry_after is not None:
        return _throttled_json(retry_after)
    return JsonResponse(mfa.begin_passkey_check(user))


@require_POST
def passkey_login_options(request: HttpRequest) -> HttpResponse:
    """The sign-in page's WebAuthn request options for a passkey alone (none named: the browser offers its own)."""
    if not mfa.passkey_login_enabled():
        return JsonResponse({"error": {"code": "not_found", "message": "Passkey sign-in is off."}}, status=404)
    retry_after = attempts.refused(request, attempts.PASSKEY_OPTIONS)
    if retry_after is not None:
        return _throttled_json(retry_after)
    return JsonResponse(mfa.begin_passkey_login())


@require_POST
def passkey_login(request: HttpRequest) -> HttpResponse:
    """Sign in with a passkey alone; refused for a member of an organization that requires SSO (as a password is),
    its break-glass owner excepted."""
    if not mfa.passkey_login_enabled():
        return redirect("console:login")
    retry_after = attempts.refused(request, attempts.PASSKEY)
    if retry_after is not None:
        view = SignInView()
        view.setup(request)
        return view.refused(retry_after)  # the assertion is not checked
    ip = request.META.get("REMOTE_ADDR")
    user = mfa.passkey_login_user(_json_or_none(request.POST.get("credential", "")))
    if user is None or not user.is_active:
        if user is not None:
            audit_log.sign_in_failed(user, reason="inactive", ip_address=ip, method="passkey")
        messages.error(request, _("That passkey could not sign you in."))
        return redirect("console:login")
    if services.password_refused_by(user) is not None:
        audit_log.sign_in_failed(user, reason="sso_required", ip_address=ip, method="passkey")
        messages.error(request, _("Your organization signs in with single sign-on: type your e-mail address and "
                                  "continue with single sign-on."))
        return redirect("console:login")
    setattr(request, mfa.PASSKEY_LOGIN_FLAG, True)
    auth_login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
    next_url = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}, request.is_secure()):
        next_url = settings.LOGIN_REDIRECT_URL
    return redirect(next_url)


@require_POST
@console_view()
def passkey_options(request: HttpRequest, actor: Actor) -> HttpResponse:
    """WebAuthn creation options for the signed-in person's new passkey (Settings → Two-factor)."""
    return JsonResponse(mfa.begin_passkey_registration(actor.user))  # type: ignore[arg-type]


@console_view()
def two_factor(request: HttpRequest, actor: Actor) -> HttpResponse:
    user: Any = actor.user
    codes: list[str] = []
    error = ""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "enable":
            codes = mfa.enable(user, request.session.get("identity.mfa.enrol", ""), request.POST.get("code", "")) or []
            if codes:
                request.session.pop("identity.mfa.enrol", None)
            else:
                error = _("That code is not right.")
        elif action == "add_passkey":
            added = mfa.add_passkey(user, request.POST.get("name", ""), _json_or_none(request.POST.get("credential", "")))
            if added is None:
                error = _("The passkey could not be registered. Try again.")
            else:
                codes = added
                messages.success(request, _("Passkey added."))
        elif action == "remove_passkey":
            raw = request.POST.get("passkey", "")
            try:
                mfa.remove_passkey(user, int(raw) if digits_only(raw) else 0)
                messages.success(request, _("Passkey removed."))
            except Conflict as exc:
                messages.error(request, exc.message)
            return redirect("signin:two-factor")
        elif action == "disable":
            try:
                mfa.disable(user)
                messages.success(request, _("Two-factor sign-in is off."))
            except Conflict as exc:
                messages.error(request, exc.message)
            return redirect("signin:two-factor")
        elif action == "policy":
            actor.require("signin:manage")
            mfa.set_required(actor=actor, required=request.POST.get("require_mfa") == "on")
            messages.success(request, _("Saved."))
            return redirect("signin:two-factor")
    enabled = mfa.has_totp(user)
    secret = ""
    if not enabled:
        secret = request.session.get("identity.mfa.enrol") or mfa.generate_totp_secret()
        request.session["identity.mfa.enrol"] = secret
    return _page(request, "console/settings/two_factor.html", "two_factor", {
        "enabled": enabled, "required": mfa.required_for(user), "codes": codes, "secret": secret,
        "passkeys": mfa.passkeys(user),
        "qr_svg": _qr_svg(user, secret) if secret else "", "error": error,
        "org_requires": mfa.organization_requires(actor.organization)}, status=422 if error else 200)


# ------------------------------------------------------------------ Settings → Sign-in


def _json_map(raw: str) -> dict[str, str]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise Invalid("The role map is not JSON.", details={"problems": [
            {"field": "role_map", "message": 'Write {"group": "role"}.'}]}) from None
    return value if isinstance(value, dict) else {"": ""}


@console_view("signin:manage")
def sign_in_settings(request: HttpRequest, actor: Actor) -> HttpResponse:
    errors: dict[str, str] = {}
    connection = OidcConnection.objects.filter(organization=actor.organization).select_related(
        "break_glass_user").first()
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            if action == "save":
                services.configure_oidc(
                    actor=actor, display_name=request.POST.get("display_name", ""),
                    issuer_url=request.POST.get("issuer_url", ""), client_id=request.POST.get("client_id", ""),
                    client_secret=request.POST.get("client_secret", ""),
                    default_role=request.POST.get("default_role", Role.MEMBER),
                    role_claim=request.POST.get("role_claim", ""), role_map=_json_map(request.POST.get("role_map", "")),
                    enabled=request.POST.get("enabled") == "on")
                messages.success(request, _("Single sign-on saved."))
            elif action == "save_saml":
                services.configure_saml(
                    actor=actor, display_name=request.POST.get("display_name", ""),
                    metadata_url=request.POST.get("metadata_url", ""),
                    metadata_xml=request.POST.get("metadata_xml", ""),
                    default_role=request.POST.get("default_role", Role.MEMBER),
                    role_claim=request.POST.get("role_claim", ""), role_map=_json_map(request.POST.get("role_map", "")),
                    enabled=request.POST.get("enabled") == "on")
                messages.success(request, _("Single sign-on saved."))
            elif action == "require":
                services.set_require_sso(actor=actor, require=request.POST.get("require_sso") == "on",
                                         break_glass_user_id=request.POST.get("break_glass_user") or None)
                messages.success(request, _("Saved."))
            elif action == "delete":
                services.delete_oidc(actor=actor)
                messages.success(request, _("Single sign-on removed."))
            elif action == "domain":
                services.claim_domain(actor=actor, domain=request.POST.get("domain", ""))
                messages.success(request, _("Publish the TXT record, then verify the domain."))
            return redirect("signin:settings")
        except (Invalid, Conflict) as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    saml_connection = connection is not None and connection.protocol == OidcConnection.SAML
    callback = (f"{settings.FRONTEND_URL}{reverse('openid_connect_callback', args=[connection.slug])}"
                if connection and not saml_connection else "")
    saml_urls = {"acs": f"{settings.FRONTEND_URL}{reverse('saml_acs', args=[connection.slug])}",
                 "metadata": f"{settings.FRONTEND_URL}{reverse('saml_metadata', args=[connection.slug])}"
                 } if connection and saml_connection else {}
    values = {"display_name": connection.display_name if connection else "",
              "issuer_url": connection.issuer_url if connection else "",
              "client_id": connection.client_id if connection else "",
              "role_claim": connection.role_claim if connection else "groups",
              "default_role": connection.default_role if connection else Role.MEMBER,
              "role_map": json.dumps(connection.role_map) if connection and connection.role_map else "",
              "metadata_url": connection.saml_metadata_url if connection else ""}
    if errors:  # the form as typed, without the secret
        values.update({k: request.POST.get(k, "") for k in values})
    owners = org_queryset(actor, Membership).filter(role=Role.OWNER, is_suspended=False).select_related("user")
    return _page(request, "console/settings/signin.html", "signin", {
        "connection": connection, "callback_url": callback, "saml_urls": saml_urls, "errors": errors, "values": values,
        "domains": org_queryset(actor, VerifiedDomain), "txt_prefix": services.TXT_PREFIX, "owners": owners,
        "roles": [(v, label) for v, label in roles.role_choices(actor.organization.pk) if v != Role.OWNER],
    }, status=422 if errors else 200)


@require_POST
@console_view("signin:manage")
def domain_action(request: HttpRequest, actor: Actor, domain_id: int) -> HttpResponse:
    domain = org_get(actor, VerifiedDomain, domain_id)
    try:
        if request.POST.get("action") == "remove":
            services.remove_domain(actor=actor, domain=domain)
            messages.success(request, _("Domain removed."))
        else:
            services.verify_domain(actor=actor, domain=domain)
            messages.success(request, _("Domain verified."))
    except (Invalid, Conflict) as exc:
        messages.error(request, exc.message)
    return redirect("signin:settings")


# ------------------------------------------------------------------ Settings → Roles


def _role_form(request: HttpRequest) -> dict[str, Any]:
    return {"name": request.POST.get("name", ""), "description": request.POST.get("description", ""),
            "permissions": request.POST.getlist("permissions")}


@console_view("roles:manage")
def role_list(request: HttpRequest, actor: Actor) -> HttpResponse:
    errors: dict[str, str] = {}
    form: dict[str, Any] = {"name": "", "description": "", "permissions": []}
    preset = request.GET.get("preset", "")
    if preset in roles.preset_permissions():
        form["permissions"] = roles.preset_permissions()[preset]
    if request.method == "POST":
        form = _role_form(request)
        try:
            roles.create_role(actor=actor, **form)
            messages.success(request, _("Role created."))
            return redirect("signin:roles")
        except (Invalid, Conflict) as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    return _page(request, "console/settings/roles.html", "roles", {
        "custom_roles": org_queryset(actor, CustomRole), "catalog": _catalog(form["permissions"]),
        "presets": Role.choices, "form": form, "errors": errors}, status=422 if errors else 200)


def _catalog(checked: list[str]) -> list[dict[str, Any]]:
    return [{"id": p, "description": PERMISSIONS[p], "checked": p in checked} for p in roles.COMPOSABLE]


@console_view("roles:manage")
def role_edit(request: HttpRequest, actor: Actor, role_id: int) -> HttpResponse:
    role = org_get(actor, CustomRole, role_id)
    errors: dict[str, str] = {}
    form: dict[str, Any] = {"name": role.name, "description": role.description, "permissions": role.permissions}
    if request.method == "POST":
        try:
            if request.POST.get("action") == "delete":
                roles.delete_role(actor=actor, role=role)
                messages.success(request, _("Role deleted."))
            else:
                form = _role_form(request)
                roles.update_role(actor=actor, role=role, **form)
                messages.success(request, _("Role saved."))
            return redirect("signin:roles")
        except (Invalid, Conflict) as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    holders = org_queryset(actor, Membership).filter(role=role.key).select_related("user")
    return _page(request, "console/settings/role_edit.html", "roles", {
        "role": role, "catalog": _catalog(form["permissions"]), "form": form, "errors": errors,
        "holders": holders}, status=422 if errors else 200)


# ------------------------------------------------------------------ Settings → Audit

AUDIT_FILTER_NAMES = ("actor", "action", "object", "since", "until")


@console_view("audit:read")
def audit_page(request: HttpRequest, actor: Actor) -> HttpResponse:
    filters = {k: request.GET.get(k, "") for k in AUDIT_FILTER_NAMES}
    try:
        qs = audit_log.events(actor, filters).order_by("-created_at", "-id")
        error = ""
    except Invalid as exc:
        qs, error = audit_log.events(actor, {}).none(), exc.message
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    query = urlencode({k: v for k, v in filters.items() if v})
    return _page(request, "console/settings/audit.html", "audit", {
        "page": page, "filters": filters, "query": query, "error": error}, status=422 if error else 200)


@console_view("audit:read")
def audit_export(request: HttpRequest, actor: Actor) -> HttpResponse:
    actor.extra["ip"] = request.META.get("REMOTE_ADDR")
    # A streamed body (an export may be large); console_view's type names the common case.
    return identity_api.export_response(actor, request.GET)  # type: ignore[return-value]


@console_view("signin:manage")
def audit_stream_settings(request: HttpRequest, actor: Actor) -> HttpResponse:
    """Settings → Audit → Stream: the organization's SIEM webhook (owners); its signing secret is shown once."""
    actor.extra["ip"] = request.META.get("REMOTE_ADDR")
    errors: dict[str, str] = {}
    new_secret = ""
    if request.method == "POST":
        try:
            if request.POST.get("action") == "remove":
                audit_stream.remove(actor=actor)
                messages.success(request, _("The audit stream was removed."))
                return redirect("signin:audit-stream")
            new_secret = audit_stream.configure(actor=actor, url=request.POST.get("url", ""),
                                                enabled=request.POST.get("enabled") == "on")[1]
            if not new_secret:
                messages.success(request, _("Saved."))
                return redirect("signin:audit-stream")
        except Invalid as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    stream = AuditStream.objects.filter(organization=actor.organization).first()
    return _page(request, "console/settings/audit_stream.html", "audit", {
        "stream": stream, "errors": errors, "new_secret": new_secret,
        "url": request.POST.get("url", "") if errors else (stream.url if stream else "")},
        status=422 if errors else 200)


# ------------------------------------------------------------------ Settings → Sessions


@console_view()
def my_sessions(request: HttpRequest, actor: Actor) -> HttpResponse:
    current = request.session.session_key
    return _page(request, "console/settings/sessions.html", "sessions", {
        "sessions": sessions.active_sessions(actor.user), "current_key": current})  # type: ignore[arg-type]


@require_POST
@console_view()
def end_sessions(request: HttpRequest, actor: Actor) -> HttpResponse:
    actor.extra["ip"] = request.META.get("REMOTE_ADDR")
    session_id = request.POST.get("session")
    if session_id:
        sessions.sign_out_session(actor=actor, session_id=int(session_id) if digits_only(session_id) else 0)
        messages.success(request, _("That session was signed out."))
    else:
        ended = sessions.sign_out_others(actor=actor, current_key=request.session.session_key)
        messages.success(request, _("Signed out of %(n)d other sessions.") % {"n": ended})
    return redirect("signin:sessions")


@require_POST
@console_view("signin:manage")
def sign_member_out(request: HttpRequest, actor: Actor, membership_id: int) -> HttpResponse:
    membership = org_get(actor, Membership, membership_id,
                         queryset=org_queryset(actor, Membership).select_related("user"))
    actor.extra["ip"] = request.META.get("REMOTE_ADDR")
    ended = sessions.sign_out_everywhere(actor=actor, membership=membership)
    messages.success(request, _("%(email)s was signed out of %(n)d sessions.") % {
        "email": membership.user.email, "n": ended})
    return redirect("console:settings-members")


@console_view("signin:manage")
def provisioning_settings(request: HttpRequest, actor: Actor) -> HttpResponse:
    """Settings → Provisioning: SCIM tokens (shown once), the role a provisioned member starts with, the groups
    that give roles."""
    errors: dict[str, str] = {}
    new_token = ""
    directory = provisioning.directory_of(actor.organization)
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            if action == "token":
                new_token = provisioning.create_token(actor=actor, name=request.POST.get("name", ""))[1]
            elif action == "revoke":
                raw_id = request.POST.get("token", "")
                provisioning.revoke_token(actor=actor, token=org_get(actor, ScimToken, raw_id if digits_only(raw_id)
                                                                      else 0))
                messages.success(request, _("Token revoked."))
                return redirect("signin:provisioning")
            elif action == "roles":
                directory = provisioning.configure_directory(
                    actor=actor, default_role=request.POST.get("default_role", Role.MEMBER),
                    role_map=_json_map(request.POST.get("role_map", "")))
                messages.success(request, _("Saved."))
                return redirect("signin:provisioning")
        except Invalid as exc:
            errors = problems_by_field(exc) or {"all": exc.message}
    role_map = request.POST.get("role_map", "") if errors else (
        json.dumps(directory.role_map) if directory.role_map else "")
    return _page(request, "console/settings/provisioning.html", "provisioning", {
        "tokens": org_queryset(actor, ScimToken), "new_token": new_token, "errors": errors,
        "scim_url": f"{settings.FRONTEND_URL.rstrip('/')}/scim/v2", "directory": directory, "role_map": role_map,
        "roles": [(v, label) for v, label in roles.role_choices(actor.organization.pk) if v != Role.OWNER],
    }, status=422 if errors else 200)


app_name = "signin"
urlpatterns = [
    path("settings/sign-in/", sign_in_settings, name="settings"),
    path("settings/sign-in/domains/<int:domain_id>", domain_action, name="domain"),
    path("settings/provisioning/", provisioning_settings, name="provisioning"),
    path("settings/roles/", role_list, name="roles"),
    path("settings/roles/<int:role_id>/", role_edit, name="role"),
    path("settings/audit/", audit_page, name="audit"),
    path("settings/audit/export", audit_export, name="audit-export"),
    path("settings/audit/stream/", audit_stream_settings, name="audit-stream"),
    path("settings/sessions/", my_sessions, name="sessions"),
    path("settings/two-factor/", two_factor, name="two-factor"),
    path("login/two-factor/", mfa_step, name="mfa"),
    path("login/two-factor/passkey-options", mfa_passkey_options, name="mfa-passkey-options"),
    path("login/passkey-options", passkey_login_options, name="passkey-login-options"),
    path("login/passkey", passkey_login, name="passkey-login"),
    path("settings/two-factor/passkey-options", passkey_options, name="passkey-options"),
    path("settings/sessions/sign-out", end_sessions, name="sessions-end"),
    path("settings/members/<int:membership_id>/sign-out", sign_member_out, name="member-sign-out"),
]
