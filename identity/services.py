"""Sign-in state changes: verified domains, the organization's OIDC provider, require-SSO, just-in-time membership.

Every function acting for someone takes a keyword-only `actor=`, runs in one transaction and writes its audit row
there. The client secret is sealed with the vault and never returned.
"""

from __future__ import annotations

import re
import secrets as pysecrets
from typing import TYPE_CHECKING, Any

import dns.exception
import dns.resolver
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from agenticos import audit, vault
from agenticos.errors import Conflict, DomainError, Invalid, NotFound
from agenticos.models import Membership, Organization
from agenticos.permissions import Role, permissions_of, role_exists
from identity import saml
from identity import sessions as browser_sessions
from identity.http import GuardedSession
from identity.models import OidcConnection, VerifiedDomain

if TYPE_CHECKING:
    from agenticos.models import User
    from agenticos.tenancy import Actor

TXT_PREFIX = "agenticos-domain-verification="
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


class SsoRefused(DomainError):
    """A sign-in through the organization's IdP that must not complete (nothing is written)."""

    status = 403
    code = "sso_refused"


def _problem(field: str, message: str) -> dict[str, str]:
    return {"field": field, "message": message}


def _invalid(message: str, *problems: dict[str, str]) -> Invalid:
    return Invalid(message, details={"problems": list(problems)})


def _record(actor: Actor, action: str, target: Any = None, **kwargs: Any) -> None:
    audit.record(actor=actor.user, organization=actor.organization, action=action, target=target,
                 ip_address=actor.extra.get("ip"), **kwargs)


def domain_of(email: str) -> str:
    return (email or "").rpartition("@")[2].strip().lower().rstrip(".")


def normalize_domain(raw: str) -> str:
    domain = (raw or "").strip().lower().rstrip(".")
    try:
        domain = domain.encode("idna").decode("ascii")
    except UnicodeError:
        return ""
    return domain if _DOMAIN.match(domain) else ""


# ------------------------------------------------------------------ who signs in where


def connection_for_email(email: str) -> OidcConnection | None:
    """The enabled IdP of the organization that verified `email`'s domain, or None."""
    domain = domain_of(email)
    if not domain:
        return None
    return (
        OidcConnection.objects.select_related("organization")
        .filter(enabled=True, organization__sign_in_domains__domain=domain,
                organization__sign_in_domains__verified_at__isnull=False)
        .first()
    )


def verified_domains(organization: Organization) -> list[str]:
    return list(VerifiedDomain.objects.filter(organization=organization, verified_at__isnull=False)
                .values_list("domain", flat=True))


def password_refused_by(user: User) -> OidcConnection | None:
    """The connection of an organization that requires SSO of `user` (not its break-glass owner), if any:
    such a person signs in through the IdP only."""
    return (
        OidcConnection.objects.select_related("organization")
        .filter(enabled=True, require_sso=True, organization__memberships__user=user,
                organization__memberships__is_suspended=False)
        .exclude(break_glass_user=user)
        .first()
    )


# ------------------------------------------------------------------ domains


def claim_domain(*, actor: Actor, domain: str) -> VerifiedDomain:
    actor.require("signin:manage")
    name = normalize_domain(domain)
    if not name:
        raise _invalid("That is not a domain name.", _problem("domain", "Write a domain such as acme.com."))
    if VerifiedDomain.objects.filter(domain=name, verified_at__isnull=False).exclude(
            organization=actor.organization).exists():
        raise Conflict("Another organization has verified this domain.", details={"field": "domain"})
    try:
        with transaction.atomic():
            row = VerifiedDomain.objects.create(organization=actor.organization, domain=name,
                                                token=pysecrets.token_urlsafe(24))
            _record(actor, "sso.domain_claimed", target=row, target_name=name)
    except IntegrityError:
        raise Conflict("This domain is already listed.", details={"field": "domain"}) from None
    return row


def _txt_values(name: str) -> list[str]:
    """The TXT strings at `name`, from the operator's resolvers (SSO_DNS_NAMESERVERS) or the system's."""
    resolver = dns.resolver.Resolver(configure=not settings.SSO_DNS_NAMESERVERS)
    if settings.SSO_DNS_NAMESERVERS:
        hosts, ports = [], []
        for entry in settings.SSO_DNS_NAMESERVERS:
            host, _, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "53")
            hosts.append(host)
            ports.append(int(port or 53))
        resolver.nameservers = hosts
        resolver.port = ports[0]
    resolver.lifetime = 5
    try:
        answer = resolver.resolve(name, "TXT")
    except (dns.exception.DNSException, OSError):
        return []
    return [b"".join(record.strings).decode("utf-8", "replace") for record in answer]


def verify_domain(*, actor: Actor, domain: VerifiedDomain) -> VerifiedDomain:
    """Verified when a TXT record at the domain holds its token (the owner publishes it at the DNS host)."""
    actor.require("signin:manage")
    if domain.organization_id != actor.organization.pk:
        raise NotFound("Domain not found.")
    if domain.is_verified:
        return domain
    if f"{TXT_PREFIX}{domain.token}" not in _txt_values(domain.domain):
        raise Invalid("The TXT record was not found yet.", code="not_verified",
                      details={"record": f"{TXT_PREFIX}{domain.token}"})
    return _mark_verified(domain, actor=actor.user, via="dns")


def operator_verify_domain(*, operator: User, domain: VerifiedDomain) -> VerifiedDomain:
    """The operator verified ownership another way (the admin's action)."""
    return _mark_verified(domain, actor=operator, via="operator")


def _mark_verified(domain: VerifiedDomain, *, actor: Any, via: str) -> VerifiedDomain:
    try:
        with transaction.atomic():
            domain.verified_at = timezone.now()
            domain.save(update_fields=["verified_at"])
            audit.record(actor=actor, organization=domain.organization, action="sso.domain_verified",
                         target=domain, target_name=domain.domain, details={"via": via})
    except IntegrityError:
        raise Conflict("Another organization has verified this domain.") from None
    return domain


def remove_domain(*, actor: Actor, domain: VerifiedDomain) -> None:
    actor.require("signin:manage")
    if domain.organization_id != actor.organization.pk:
        raise NotFound("Domain not found.")
    with transaction.atomic():
        _record(actor, "sso.domain_removed", target=domain, target_name=domain.domain)
        domain.delete()


# ------------------------------------------------------------------ the OIDC connection


def _discovery_url(issuer: str) -> str:
    return issuer if "/.well-known/" in issuer else issuer.rstrip("/") + "/.well-known/openid-configuration"


def check_issuer(issuer_url: str) -> dict[str, Any]:
    """Fetch the issuer's discovery document through the outbound guard and check it names itself."""
    import requests

    try:
        with GuardedSession() as session:
            answer = session.get(_discovery_url(issuer_url))
        answer.raise_for_status()
        config = answer.json()
    except (requests.RequestException, ValueError) as exc:
        raise _invalid("The issuer's discovery document could not be read.",
                       _problem("issuer_url", str(exc)[:300])) from None
    if not isinstance(config, dict) or not all(
            isinstance(config.get(k), str) for k in ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")):
        raise _invalid("That is not an OpenID Connect issuer.",
                       _problem("issuer_url", "The discovery document lacks issuer, endpoints or jwks_uri."))
    if config["issuer"].rstrip("/") != issuer_url.rstrip("/").removesuffix("/.well-known/openid-configuration"):
        raise _invalid("The issuer names another issuer.",
                       _problem("issuer_url", f"The discovery document's issuer is {config['issuer']}."))
    return config


def _check_role_settings(organization: Organization, default_role: str, role_map: dict[str, str]) -> None:
    problems = []
    if not role_exists(organization.pk, default_role) or default_role == Role.OWNER:
        problems.append(_problem("default_role", "Choose a role of this organization other than Owner."))
    if not isinstance(role_map, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in role_map.items()):
        problems.append(_problem("role_map", "Map each group (text) to a role key (text)."))
    else:
        for group, role in role_map.items():
            if role == Role.OWNER or not role_exists(organization.pk, role):
                problems.append(_problem("role_map", f"{group!r} maps to {role!r}, not a role SSO may give here."))
    if problems:
        raise _invalid("The role settings are invalid.", *problems)


def configure_oidc(*, actor: Actor, display_name: str, issuer_url: str, client_id: str, client_secret: str = "",
                   default_role: str = Role.MEMBER, role_claim: str = "groups",
                   role_map: dict[str, str] | None = None, enabled: bool = True) -> OidcConnection:
    """Create or update the organization's IdP. An empty `client_secret` on update keeps the sealed one."""
    actor.require("signin:manage")
    role_map = role_map or {}
    issuer_url = (issuer_url or "").strip()
    client_id = (client_id or "").strip()
    problems = []
    if not issuer_url.startswith(("https://", "http://")):
        problems.append(_problem("issuer_url", "The issuer is an http(s) URL."))
    if not client_id:
        problems.append(_problem("client_id", "This field is required."))
    existing = OidcConnection.objects.filter(organization=actor.organization).first()
    if existing is not None and existing.protocol != OidcConnection.OIDC:
        raise Conflict("Remove the SAML provider first.")
    if existing is None and not client_secret:
        problems.append(_problem("client_secret", "This field is required."))
    if problems:
        raise _invalid("The sign-in settings are invalid.", *problems)
    _check_role_settings(actor.organization, default_role, role_map)
    check_issuer(issuer_url)
    fields: dict[str, Any] = {
        "display_name": (display_name or "").strip()[:120] or actor.organization.name,
        "issuer_url": issuer_url, "client_id": client_id, "default_role": default_role,
        "role_claim": (role_claim or "").strip()[:80], "role_map": role_map, "enabled": bool(enabled),
    }
    with transaction.atomic():
        connection = existing or OidcConnection(organization=actor.organization,
                                                slug=_unique_slug(actor.organization))
        changed = [name for name, value in fields.items() if getattr(connection, name, None) != value]
        for name, value in fields.items():
            setattr(connection, name, value)
        if client_secret:
            sealed = vault.seal(actor.organization.pk, client_secret)
            connection.key_version, connection.wrapped_key = sealed.key_version, sealed.wrapped_key
            connection.ciphertext, connection.secret_hint = sealed.ciphertext, sealed.hint
            changed.append("client_secret")
        connection.updated_at = timezone.now()
        connection.save()
        # Field names only: never the secret, nor values an auditor does not need.
        _record(actor, "sso.configured" if existing else "sso.created", target=connection,
                details={"fields": sorted(set(changed))})
    return connection


def read_saml_metadata(metadata_url: str, metadata_xml: str) -> dict[str, str]:
    """The IdP's metadata, pasted or read from its URL through the outbound guard (identity.http)."""
    import requests

    if metadata_xml.strip():
        source = metadata_xml.strip()
    elif metadata_url:
        if not metadata_url.startswith(("https://", "http://")):
            raise _invalid("The metadata URL is an http(s) URL.", _problem("metadata_url", "Write an http(s) URL."))
        try:
            with GuardedSession() as session:
                answer = session.get(metadata_url)
            answer.raise_for_status()
        except requests.RequestException as exc:
            raise _invalid("The IdP's metadata could not be read.", _problem("metadata_url", str(exc)[:300])) from None
        if len(answer.content) > saml.MAX_METADATA_BYTES:
            raise _invalid("The IdP's metadata is too large.", _problem("metadata_url", "Over 512 kB."))
        source = answer.text
    else:
        raise _invalid("The SAML settings are invalid.",
                       _problem("metadata_url", "Give the IdP's metadata URL or paste its XML."))
    try:
        return saml.parse_metadata(source)
    except saml.MetadataProblem as exc:
        raise _invalid("The IdP's metadata cannot be used.",
                       _problem("metadata_xml" if metadata_xml.strip() else "metadata_url", str(exc))) from None


def give_saml_sp_key(connection: OidcConnection) -> None:
    """A new SAML connection's service-provider key pair: the certificate in the row, the private key sealed."""
    sp_key, connection.saml_sp_cert = saml.new_sp_key_pair(f"{connection.organization.slug} AgenticOS SP")
    sealed = vault.seal(connection.organization_id, sp_key)
    connection.key_version, connection.wrapped_key = sealed.key_version, sealed.wrapped_key
    connection.ciphertext, connection.secret_hint = sealed.ciphertext, ""


def configure_saml(*, actor: Actor, display_name: str, metadata_url: str = "", metadata_xml: str = "",
                   default_role: str = Role.MEMBER, role_claim: str = "groups",
                   role_map: dict[str, str] | None = None, enabled: bool = True) -> OidcConnection:
    """Create or update the organization's SAML 2.0 IdP from its metadata (URL or XML). The first save makes the
    organization's service-provider key pair; the private key is sealed and never shown."""
    actor.require("signin:manage")
    role_map = role_map or {}
    metadata_url = (metadata_url or "").strip()
    existing = OidcConnection.objects.filter(organization=actor.organization).first()
    if existing is not None and existing.protocol != OidcConnection.SAML:
        raise Conflict("Remove the OpenID Connect provider first.")
    _check_role_settings(actor.organization, default_role, role_map)
    if existing is not None and not metadata_url and not (metadata_xml or "").strip():
        found = {"entity_id": existing.saml_entity_id, "sso_url": existing.saml_sso_url,
                 "cert": existing.saml_idp_cert}  # the roles or the name changed; the IdP did not
    else:
        found = read_saml_metadata(metadata_url, metadata_xml or "")
    fields: dict[str, Any] = {
        "display_name": (display_name or "").strip()[:120] or actor.organization.name,
        "saml_metadata_url": metadata_url, "saml_entity_id": found["entity_id"][:500],
        "saml_sso_url": found["sso_url"][:500], "saml_idp_cert": found["cert"], "default_role": default_role,
        "role_claim": (role_claim or "").strip()[:80], "role_map": role_map, "enabled": bool(enabled),
    }
    with transaction.atomic():
        connection = existing or OidcConnection(organization=actor.organization, protocol=OidcConnection.SAML,
                                                slug=_unique_slug(actor.organization))
        changed = [name for name, value in fields.items() if getattr(connection, name, None) != value]
        for name, value in fields.items():
            setattr(connection, name, value)
        if existing is None:
            give_saml_sp_key(connection)
        connection.updated_at = timezone.now()
        connection.save()
        _record(actor, "sso.configured" if existing else "sso.created", target=connection,
                details={"protocol": "saml", "fields": sorted(set(changed))})
    return connection


def _unique_slug(organization: Organization) -> str:
    base = slugify(organization.slug)[:70] or "org"
    slug, n = base, 1
    while OidcConnection.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def set_require_sso(*, actor: Actor, require: bool, break_glass_user_id: Any = None) -> OidcConnection:
    """Require SSO of the organization's members; one owner keeps password sign-in (the break-glass account),
    so a broken IdP never locks the organization out."""
    actor.require("signin:manage")
    connection = OidcConnection.objects.filter(organization=actor.organization).first()
    if connection is None:
        raise Conflict("Configure the identity provider first.")
    with transaction.atomic():
        connection = OidcConnection.objects.select_for_update().get(pk=connection.pk)
        if require:
            if not connection.enabled or not verified_domains(actor.organization):
                raise Conflict("SSO can be required once the provider is enabled and a domain is verified.")
            glass = break_glass_user_id or actor.user_id
            if not Membership.objects.filter(organization=actor.organization, user_id=glass, role=Role.OWNER,
                                             is_suspended=False).exists():
                raise _invalid("The break-glass account must be an owner of this organization.",
                               _problem("break_glass_user", "Choose an active owner."))
            connection.break_glass_user_id = glass
        turned_on = bool(require) and not connection.require_sso
        connection.require_sso = bool(require)
        connection.updated_at = timezone.now()
        connection.save(update_fields=["require_sso", "break_glass_user", "updated_at"])
        details: dict[str, Any] = {"require_sso": connection.require_sso,
                                   "break_glass_user": connection.break_glass_user_id}
        if turned_on:
            details["password_sessions_closed"] = browser_sessions.close_password_sessions(
                actor.organization, except_user_id=connection.break_glass_user_id)
        _record(actor, "sso.require_changed", target=connection, details=details)
    return connection


def delete_oidc(*, actor: Actor) -> None:
    actor.require("signin:manage")
    connection = OidcConnection.objects.filter(organization=actor.organization).first()
    if connection is None:
        raise NotFound("No identity provider is configured.")
    with transaction.atomic():
        _record(actor, "sso.deleted", target=connection)
        connection.delete()


def client_secret_of(connection: OidcConnection) -> str:
    """Runtime use only (the token request, or the SAML AuthnRequest's signature); never in a response or log."""
    return vault.reveal(connection)  # its own sealed row: the use is a `secret.used` audit event like a Secret's


# ------------------------------------------------------------------ at sign-in


def _claim_values(claims: dict[str, Any], name: str) -> list[str]:
    value = claims.get(name) if name else None
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SsoRefused(f"The {name!r} claim is neither text nor a list of text.")


def role_for_claims(connection: OidcConnection, claims: dict[str, Any]) -> str | None:
    """The role the IdP's group claim gives, or None (the claim is absent or names no mapped group).

    With a role map, groups it does not list are ignored (an IdP sends many), and a listed group whose role this
    organization no longer has refuses the sign-in. Without one, the claim's values name roles themselves, and a
    value that is no role of this organization refuses it. Owner is never given by an IdP."""
    values = _claim_values(claims, connection.role_claim)
    if connection.role_map:
        roles = [connection.role_map[v] for v in values if v in connection.role_map]
    else:
        roles = values
    organization_id = connection.organization_id
    for role in roles:
        if role == Role.OWNER or not role_exists(organization_id, role):
            raise SsoRefused(f"The identity provider names a role this organization does not have ({role[:80]!r}).")
    if not roles:
        return None
    # The strongest of the roles the person holds (the most permissions).
    return max(roles, key=lambda r: (len(permissions_of(r)), r))


def check_sign_in(connection: OidcConnection, email: str, claims: dict[str, Any]) -> str | None:
    """Everything that must hold before anything is written; returns the claim's role (or None)."""
    if not connection.enabled:
        raise SsoRefused("Single sign-on is turned off for this organization.")
    domain = domain_of(email)
    if not domain or domain not in verified_domains(connection.organization):
        raise SsoRefused("This e-mail address is not in a domain the organization has verified.")
    return role_for_claims(connection, claims)


def join_by_sso(*, user: User, connection: OidcConnection, claimed_role: str | None,
                ip_address: str | None = None) -> Membership:
    """Just-in-time membership: a first SSO sign-in joins with the claimed role or the default one; a later one
    follows the IdP's group claim (never for an owner, whom only the organization changes)."""
    organization = connection.organization
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(organization=organization, user=user).first()
        if membership is None:
            role = claimed_role or connection.default_role
            membership = Membership.objects.create(organization=organization, user=user, role=role)
            audit.record(actor=user, organization=organization, action="member.joined_by_sso", target=membership,
                         target_name=user.email, details={"role": role}, ip_address=ip_address)
        elif claimed_role and membership.role != claimed_role and membership.role != Role.OWNER:
            before, membership.role = membership.role, claimed_role
            membership.save(update_fields=["role"])
            audit.record(actor=None, organization=organization, action="member.role_changed", target=membership,
                         target_name=user.email, details={"from": before, "to": claimed_role, "via": "sso"},
                         ip_address=ip_address)
    return membership

