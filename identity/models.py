"""Sign-in per organization: the domains it has proven it owns, and its OpenID Connect identity provider.

The client secret is sealed with the vault (agenticos.vault) in the connection's own row — not an
`agenticos.Secret`, which members may attach to agents: an IdP's client secret is never a tool credential.
`manage.py vault_rewrap` finds the row by its `organization, key_version, wrapped_key, ciphertext` fields.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agenticos.models import Organization
from agenticos.permissions import Role


class VerifiedDomain(models.Model):
    """An e-mail domain an organization claims. Only a verified one routes sign-ins or admits SSO e-mails;
    a domain is verified for at most one organization."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="sign_in_domains")
    domain = models.CharField(max_length=253)
    # The TXT record the owner publishes (`agenticos-domain-verification=<token>`); an operator may also
    # verify by hand in the admin after checking it.
    token = models.CharField(max_length=64)
    verified_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["domain"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "domain"], name="domain_unique_per_org"),
            models.UniqueConstraint(fields=["domain"], condition=Q(verified_at__isnull=False),
                                    name="domain_verified_once"),
        ]

    def __str__(self) -> str:
        return self.domain

    @property
    def is_verified(self) -> bool:
        return self.verified_at is not None


class OidcConnection(models.Model):
    """An organization's identity provider: OpenID Connect (Entra ID, Okta, Google Workspace, Keycloak, …) or
    SAML 2.0 (`protocol`). One per organization, so domain routing, require-SSO with its break-glass owner, JIT
    membership and the role map are the same for both; the class keeps its first name to spare a table rename.

    allauth reads it as a `SocialApp` (identity.adapter.list_apps): of its `openid_connect` provider, with `slug` as
    the provider id in the callback URL (/accounts/oidc/<slug>/login/callback/), or of its `saml` provider, with
    `slug` as the organization slug in /accounts/saml/<slug>/acs/."""

    OIDC = "oidc"
    SAML = "saml"
    PROTOCOLS = [(OIDC, "OpenID Connect"), (SAML, "SAML 2.0")]

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="oidc_connection")
    slug = models.SlugField(max_length=80, unique=True)
    protocol = models.CharField(max_length=8, choices=PROTOCOLS, default=OIDC)
    display_name = models.CharField(max_length=120)
    issuer_url = models.URLField(max_length=500, blank=True)
    client_id = models.CharField(max_length=300, blank=True)
    # SAML: the IdP as its metadata describes it (read once, at configuration, through the outbound guard), and
    # the certificate of this service provider's own key (AuthnRequests are signed with it).
    saml_metadata_url = models.URLField(max_length=500, blank=True)
    saml_entity_id = models.CharField(max_length=500, blank=True)
    saml_sso_url = models.URLField(max_length=500, blank=True)
    saml_idp_cert = models.TextField(blank=True)
    saml_sp_cert = models.TextField(blank=True)
    # OIDC: the client secret; SAML: the service provider's private key. Sealed (agenticos.vault); never shown
    # again after it is saved.
    key_version = models.PositiveIntegerField()
    wrapped_key = models.BinaryField()
    ciphertext = models.BinaryField()
    secret_hint = models.CharField(max_length=4, blank=True)
    enabled = models.BooleanField(default=True)
    # Password sign-in refused for the organization's members, except the break-glass owner below.
    require_sso = models.BooleanField(default=False)
    break_glass_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                         blank=True, related_name="+")
    # Just-in-time membership: the role a first SSO sign-in joins with, unless the role claim maps one.
    default_role = models.CharField(max_length=80, default=Role.MEMBER)
    # The ID-token / userinfo claim that lists the person's groups (Entra "groups" or "roles", Okta "groups").
    role_claim = models.CharField(max_length=80, blank=True, default="groups")
    # {"group value": "role key"}; empty: the claim's values name roles of the organization themselves.
    role_map = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "OIDC connection"

    def __str__(self) -> str:
        return f"{self.display_name} ({self.organization})"


class UserSession(models.Model):
    """A signed-in browser session, so a person can list theirs and sign the others out (Django's session table
    cannot be read by user). The row goes with the session: on sign-out, on "sign out the others", and when an
    owner signs a member out everywhere."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="browser_sessions")
    session_key = models.CharField(max_length=40, unique=True)
    method = models.CharField(max_length=16)  # password | sso
    # For an SSO session, the organization whose identity provider signed the person in: an organization that
    # requires SSO admits only sessions signed in through its own provider (identity.sessions.session_gate).
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="+")
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user} · {self.method} · {self.created_at:%Y-%m-%d %H:%M}"


class ClosedSession(models.Model):
    """A browser session closed for one organization: it can no longer act there, while it stays open for the
    person's other organizations (an owner signed the member out, SCIM deprovisioned them, SSO became required).

    What a session is here: one sign-in of a person in one browser (Django's session), which may act in every
    organization the person belongs to and switch between them. One organization's owners decide who acts in
    their organization, never whether the person stays signed in to another one; so they close the session for
    their organization, and it is ended outright only when no organization is left open to it
    (identity.sessions.close_in_organization)."""

    session_key = models.CharField(max_length=40)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=40)
    closed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session_key", "organization"], name="session_closed_once")]

    def __str__(self) -> str:
        return f"{self.session_key[:6]}… closed for {self.organization_id} ({self.reason})"


class CustomRole(models.Model):
    """A role an organization's owners composed from the permission catalog (agenticos.permissions.PERMISSIONS).
    Members hold it as the role key "custom:<id>"; the kernel reads its permissions through identity.roles."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="custom_roles")
    name = models.CharField(max_length=80)
    description = models.CharField(max_length=300, blank=True)
    permissions = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="custom_role_unique_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        return f"custom:{self.pk}"


class SignInPolicy(models.Model):
    """An organization's sign-in rules beyond SSO: two-factor required for its members' password sign-ins."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="sign_in_policy")
    require_mfa = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.organization} sign-in policy"


class ScimDirectory(models.Model):
    """An organization's SCIM 2.0 provisioning (identity.scim): the role a provisioned member starts with and the
    IdP groups that give roles ({"group display name": "role key"}; owner is never given)."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="scim_directory")
    default_role = models.CharField(max_length=80, default=Role.MEMBER)
    role_map = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "SCIM directory"
        verbose_name_plural = "SCIM directories"

    def __str__(self) -> str:
        return f"{self.organization} SCIM"


class ScimToken(models.Model):
    """The bearer token an organization's IdP provisions with. Only its SHA-256 is kept; shown once; it reaches
    this organization's members and groups and nothing else."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="scim_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class ScimUser(models.Model):
    """What the IdP told about a member it provisioned (its externalId and names); the SCIM User is the
    membership — its id is the membership's, `active` is "not suspended"."""

    membership = models.OneToOneField("agenticos.Membership", on_delete=models.CASCADE, related_name="scim")
    external_id = models.CharField(max_length=300, blank=True)
    given_name = models.CharField(max_length=150, blank=True)
    family_name = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"SCIM {self.membership}"


class ScimGroup(models.Model):
    """A group the IdP pushed; its members are memberships of the same organization."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="scim_groups")
    display_name = models.CharField(max_length=200)
    external_id = models.CharField(max_length=300, blank=True)
    members = models.ManyToManyField("agenticos.Membership", blank=True, related_name="scim_groups")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["display_name"]
        constraints = [models.UniqueConstraint(fields=["organization", "display_name"], name="scim_group_name")]

    def __str__(self) -> str:
        return self.display_name


class AuditStream(models.Model):
    """An organization's live copy of its audit trail to a SIEM: an HTTPS webhook whose requests carry an
    HMAC-SHA256 signature (identity.audit_stream), or syslog over TCP/TLS when `url` is `syslog+tls://host:port`
    (identity.syslog; the URLField's validators are never run on it: identity.audit_stream checks the address). Delivery is at-least-once: `delivered_up_to` is the id of the last
    audit event the receiver acknowledged, so while it is down the backlog is simply the events after it."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="audit_stream")
    url = models.URLField(max_length=500)
    # The signing secret, sealed (agenticos.vault); shown once when made, never again.
    key_version = models.PositiveIntegerField()
    wrapped_key = models.BinaryField()
    ciphertext = models.BinaryField()
    secret_hint = models.CharField(max_length=4, blank=True)
    enabled = models.BooleanField(default=True)
    delivered_up_to = models.BigIntegerField(default=0)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.organization} → {self.url}"
