"""Two-factor sign-in with allauth's MFA (TOTP, passkeys/WebAuthn and recovery codes): its `Authenticator` rows, its
TOTP and recovery code checks (a code used once, a tolerance window), its WebAuthn ceremonies (fido2's server: the
challenge kept in the session, origin and RP id checked, the signature counter), its secrets sealed with the
project's vault (`MfaAdapter`).

The console's password sign-in is Django's LoginView, not allauth's account flow, so allauth's own login stage does
not run: the second step is here (`start_second_step` / `finish_second_step`) and uses allauth's checks as they are.
A password sign-in needs the second step when the person has TOTP or a passkey, or when an organization they belong to requires
it (`SignInPolicy.require_mfa`): then they enrol before the session starts. SSO sign-ins leave it to the IdP.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from allauth.mfa.adapter import DefaultMFAAdapter
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret, validate_totp_code
from allauth.mfa.webauthn.internal import auth as webauthn
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest

from agenticos import audit, vault
from agenticos.models import Membership
from agenticos.strings import digits_only
from identity.models import SignInPolicy

if TYPE_CHECKING:
    from agenticos.models import User

# The vault binds a value to an id; per-person secrets are bound to this scope (no organization owns them).
VAULT_SCOPE = "mfa"
PENDING_KEY = "identity.mfa.pending"  # {"user": id, "backend": path, "secret": enrolment secret or None}


class MfaAdapter(DefaultMFAAdapter):
    """allauth stores TOTP secrets and recovery seeds through these hooks: sealed, not in the clear."""

    def encrypt(self, text: str) -> str:
        sealed = vault.seal(VAULT_SCOPE, text)
        blob = {"v": sealed.key_version, "k": base64.b64encode(sealed.wrapped_key).decode(),
                "c": base64.b64encode(sealed.ciphertext).decode()}
        return "vault:" + json.dumps(blob)

    def decrypt(self, encrypted_text: str) -> str:
        blob = json.loads(encrypted_text.removeprefix("vault:"))
        return vault.open_sealed(VAULT_SCOPE, blob["v"], base64.b64decode(blob["k"]), base64.b64decode(blob["c"]))


def has_totp(user: User) -> bool:
    return Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).exists()


SECOND_FACTORS = (Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN)


def has_second_factor(user: User) -> bool:
    """TOTP or a passkey: either satisfies an organization that requires two-factor."""
    return Authenticator.objects.filter(user=user, type__in=SECOND_FACTORS).exists()


def has_passkey(user: User) -> bool:
    return Authenticator.objects.filter(user=user, type=Authenticator.Type.WEBAUTHN).exists()


def required_for(user: User) -> bool:
    organization_ids = Membership.objects.filter(user=user, is_suspended=False).values("organization_id")
    return SignInPolicy.objects.filter(organization_id__in=organization_ids, require_mfa=True).exists()


def needs_second_step(user: User) -> bool:
    return has_second_factor(user) or required_for(user)


def start_second_step(request: HttpRequest, user: Any) -> None:
    """The password was right: the session holds who is half signed in (not signed in) until the code."""
    request.session[PENDING_KEY] = {"user": user.pk, "backend": getattr(user, "backend", ""),
                                    "secret": None if has_second_factor(user) else generate_totp_secret()}


def pending(request: HttpRequest) -> dict[str, Any] | None:
    value = request.session.get(PENDING_KEY)
    return value if isinstance(value, dict) else None


def check_code(user: User, code: str, *, enrol_secret: str | None) -> str | None:
    """"totp" or "recovery_code" when `code` is right (and now used), None otherwise. With `enrol_secret` (a first
    sign-in where the organization requires two-factor), a right code activates TOTP and recovery codes."""
    code = (code or "").strip().replace(" ", "")
    if enrol_secret is not None:
        if not validate_totp_code(enrol_secret, code):
            return None
        with transaction.atomic():
            TOTP.activate(user, enrol_secret)
            RecoveryCodes.activate(user)
            _record(user, "mfa.enabled")
        return "totp"
    totp = Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).first()
    if totp is not None and digits_only(code) and TOTP(totp).validate_code(code):
        return "totp"
    codes = Authenticator.objects.filter(user=user, type=Authenticator.Type.RECOVERY_CODES).first()
    if codes is not None and RecoveryCodes(codes).validate_code(code):
        _record(user, "mfa.recovery_code_used")
        return "recovery_code"
    return None


def enable(user: User, secret: str, code: str) -> list[str] | None:
    """Turn TOTP on from the settings page; returns the recovery codes to show once, or None for a wrong code."""
    if has_totp(user) or not validate_totp_code(secret, (code or "").strip()):
        return None
    with transaction.atomic():
        TOTP.activate(user, secret)
        codes = RecoveryCodes.activate(user)
        _record(user, "mfa.enabled")
    return codes.get_unused_codes()


# ------------------------------------------------------------------ passkeys (allauth's WebAuthn, fido2 underneath)
# allauth's own WebAuthn views belong to its account pages, which the console does not use (see the module's
# docstring); these call the same `allauth.mfa.webauthn.internal.auth` functions its views do. They need allauth's
# request context, which its AccountMiddleware sets for every request.


def passkeys(user: User) -> list[dict[str, Any]]:
    return [{"id": a.pk, "name": webauthn.WebAuthn(a).name, "created_at": a.created_at, "last_used_at": a.last_used_at}
            for a in Authenticator.objects.filter(user=user, type=Authenticator.Type.WEBAUTHN).order_by("created_at")]


def begin_passkey_registration(user: User) -> dict[str, Any]:
    """The PublicKeyCredentialCreationOptions (JSON form) for `navigator.credentials.create`; the challenge stays
    in the session. Passwordless (allauth's flag): a discoverable credential with user verification, so the same
    passkey is a second factor and, alone, a sign-in (`passkey_login_user`)."""
    return webauthn.begin_registration(user, passwordless=True)


def add_passkey(user: User, name: str, credential: Any) -> list[str] | None:
    """Register the browser's answer; returns the recovery codes to show once when this is the person's first
    second factor ([] otherwise), or None when the answer does not hold (wrong challenge, origin, RP id)."""
    if not isinstance(credential, dict):
        return None
    try:
        webauthn.complete_registration(credential)
    except (ValidationError, ValueError, TypeError, KeyError):
        return None
    with transaction.atomic():
        webauthn.WebAuthn.add(user, (name or "").strip()[:60] or "Passkey", credential)
        codes: list[str] = []
        if not Authenticator.objects.filter(user=user, type=Authenticator.Type.RECOVERY_CODES).exists():
            codes = RecoveryCodes.activate(user).get_unused_codes()
        _record(user, "mfa.passkey_added")
    return codes


def remove_passkey(user: User, passkey_id: int) -> None:
    """Only the person's own passkey; the last second factor stays while an organization requires two-factor."""
    from agenticos.errors import Conflict, NotFound

    with transaction.atomic():
        found = Authenticator.objects.select_for_update().filter(
            user=user, type=Authenticator.Type.WEBAUTHN, pk=passkey_id).first()
        if found is None:
            raise NotFound("Passkey not found.")
        others = Authenticator.objects.filter(user=user, type__in=SECOND_FACTORS).exclude(pk=found.pk)
        if required_for(user) and not others.exists():
            raise Conflict("An organization you belong to requires two-factor sign-in: keep one factor.")
        found.delete()
        if not others.exists():  # no second factor left: the recovery codes would be a factor of their own
            Authenticator.objects.filter(user=user, type=Authenticator.Type.RECOVERY_CODES).delete()
        _record(user, "mfa.passkey_removed")


def begin_passkey_check(user: User) -> dict[str, Any]:
    """The PublicKeyCredentialRequestOptions for `navigator.credentials.get`, naming the person's passkeys."""
    return webauthn.begin_authentication(user)


def check_passkey(user: User, credential: Any) -> bool:
    """Whether the browser's assertion is a valid signature of one of the person's passkeys over this session's
    challenge (used once: the challenge leaves the session)."""
    if not isinstance(credential, dict):
        return False
    try:
        authenticator = webauthn.complete_authentication(user, credential)
    except (ValidationError, ValueError, TypeError, KeyError):
        return False
    authenticator.record_usage()
    return True


# ------------------------------------------------------------------ signing in with a passkey alone
# allauth's passkey login (MFA_PASSKEY_LOGIN_ENABLED) as its LoginWebAuthnForm does it: request options naming no
# credential and requiring user verification, the person read from the assertion's user handle, the signature
# checked against that person's passkeys. The console's sign-in page is not allauth's, so the view is ours.

PASSKEY_LOGIN_FLAG = "_agenticos_passkey"  # set on the request, so the sign-in receiver records the method


def passkey_login_enabled() -> bool:
    from allauth.mfa import app_settings

    return bool(app_settings.PASSKEY_LOGIN_ENABLED) and "webauthn" in app_settings.SUPPORTED_TYPES


def begin_passkey_login() -> dict[str, Any]:
    """Request options for a discoverable passkey (no e-mail asked first, so none is told whether it has one)."""
    return webauthn.begin_authentication(None)


def passkey_login_user(credential: Any) -> User | None:
    """The person whose passkey signed this session's challenge with user verification (fido2 refuses an assertion
    without the UV flag when it was required), or None. The challenge is used once."""
    if not isinstance(credential, dict):
        return None
    try:
        user = webauthn.extract_user_from_response(credential)
        authenticator = webauthn.complete_authentication(user, credential)
    except (ValidationError, ValueError, TypeError, KeyError, AttributeError):
        return None
    authenticator.record_usage()
    return user  # type: ignore[return-value]


def disable(user: User) -> None:
    if required_for(user):
        from agenticos.errors import Conflict

        raise Conflict("An organization you belong to requires two-factor sign-in.")
    with transaction.atomic():
        Authenticator.objects.filter(user=user).delete()
        _record(user, "mfa.disabled")


def recovery_codes(user: User) -> list[str]:
    found = Authenticator.objects.filter(user=user, type=Authenticator.Type.RECOVERY_CODES).first()
    return RecoveryCodes(found).get_unused_codes() if found else []


def _record(user: User, action: str) -> None:
    for membership in Membership.objects.filter(user=user).select_related("organization"):
        audit.record(actor=user, organization=membership.organization, action=action, target=user,
                     target_name=user.email)


def organization_requires(organization: Any) -> bool:
    return SignInPolicy.objects.filter(organization=organization, require_mfa=True).exists()


def set_required(*, actor: Any, required: bool) -> SignInPolicy:
    """Require two-factor for the organization's members' password sign-ins (owners decide: signin:manage)."""
    actor.require("signin:manage")
    from django.utils import timezone

    with transaction.atomic():
        policy, _ = SignInPolicy.objects.select_for_update().get_or_create(organization=actor.organization)
        policy.require_mfa, policy.updated_at = bool(required), timezone.now()
        policy.save()
        audit.record(actor=actor.user, organization=actor.organization, action="sso.require_mfa_changed",
                     target=policy, details={"require_mfa": policy.require_mfa}, ip_address=actor.extra.get("ip"))
    return policy
