"""Sandbox connections (Settings → Sandboxes): where an organization's `service` workspaces run.

- An operator (secrets:manage) registers a sandboxd by URL and one of the organization's secrets holding
  its token; the URL passes the outbound guard (SANDBOX_ALLOWED_PRIVATE_HOSTS lists private hosts).
- The deployment's own sandboxd ("This deployment's sandbox") is registered as an organization's default
  the first time one is needed — listing sandboxes or running an agent that needs one — on behalf of the
  organization's owner, audited like any other connection. What is sealed in the organization's vault is a
  token derived for that organization (`tenant_token`), so the organization's secret opens its own
  workspaces on the shared sandboxd and nobody else's.
- `publish_problems` refuses a `service` binding when the organization has no connection, when the one
  it names is gone, or when that connection has no credential, each by name.

- A connection's `kind` says what answers at its URL: a sandboxd (`client.SandboxdClient`) or a Daytona API
  endpoint (`daytona.DaytonaClient`, its URL the API base and its secret a Daytona API key). Both go through
  the same outbound guard and the same publish checks.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from agenticos import audit, netguard, vault
from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.models import Membership, Organization, Secret, SecretKind
from agenticos.permissions import Role
from agenticos.tenancy import Actor
from workspaces.client import SANDBOX_HOSTS, SandboxdClient
from workspaces.daytona import DaytonaClient
from workspaces.models import SandboxConnection

log = logging.getLogger(__name__)
DEPLOYMENT_NAME = "This deployment's sandbox"
DEPLOYMENT_SECRET_NAME = "sandboxd service token"  # noqa: S105 — a secret's name, not its value
MANAGE = "secrets:manage"
SANDBOXD, DAYTONA = "sandboxd", "daytona"
KINDS = {SANDBOXD: "sandboxd", DAYTONA: "Daytona"}


class ConnectionUnavailable(Exception):
    """No usable connection for a run; the message says which case, for the operator."""


def _problem(field: str, message: str) -> Invalid:
    return Invalid(message, details={"problems": [{"field": field, "message": message}]})


# ------------------------------------------------------------------ the deployment's own sandboxd


def deployment_token() -> str | None:
    """The own sandboxd's service token (SANDBOXD_TOKEN_FILE), or None when this deployment runs none."""
    if not settings.SANDBOXD_URL:
        return None
    if getattr(settings, "SANDBOXD_TOKEN", ""):
        return str(settings.SANDBOXD_TOKEN)
    try:
        token = Path(settings.SANDBOXD_TOKEN_FILE).read_text().strip()
    except OSError:
        return None
    return token or None


def tenant_token(service_token: str, organization: Organization) -> str:
    """What an organization holds of the own sandboxd: a token derived for it alone (sandboxd/tokens.py),
    which reaches only its own workspaces — never the service token, which reaches everybody's."""
    from sandboxd.tokens import derive

    return derive(service_token, str(organization.pk).replace("-", ""))


def _seal_into(secret: Secret | None, organization: Organization, service_token: str, owner: Any) -> Secret:
    sealed = vault.seal(organization.pk, tenant_token(service_token, organization))
    if secret is None:
        name = DEPLOYMENT_SECRET_NAME
        if Secret.objects.filter(organization=organization, name=name).exists():
            name = f"{name} {uuid.uuid4().hex[:6]}"
        return Secret.objects.create(organization=organization, name=name, kind=SecretKind.API_KEY,
                                     description="Token of this deployment's sandbox service (sandboxd).",
                                     hint=sealed.hint, key_version=sealed.key_version,
                                     wrapped_key=sealed.wrapped_key, ciphertext=sealed.ciphertext,
                                     created_by=owner)
    secret.hint, secret.key_version = sealed.hint, sealed.key_version
    secret.wrapped_key, secret.ciphertext = sealed.wrapped_key, sealed.ciphertext
    secret.save(update_fields=["hint", "key_version", "wrapped_key", "ciphertext"])
    return secret


def ensure_default(organization: Organization) -> SandboxConnection | None:
    """The organization's default connection; registers the deployment's own sandboxd as the default when
    the organization has none and this deployment runs one (on behalf of the owner, audited)."""
    current = SandboxConnection.objects.filter(organization=organization, is_default=True).first()
    if current is not None:
        return current
    token = deployment_token()
    if token is None:
        return None
    owner_row = (Membership.objects.filter(organization=organization, role=Role.OWNER).select_related("user")
                 .order_by("created_at").first())
    owner = owner_row.user if owner_row is not None else None
    try:
        with transaction.atomic():
            existing = SandboxConnection.objects.select_for_update().filter(
                organization=organization, is_deployment=True).first()
            if existing is not None:  # registered before, no longer the default: it becomes it again
                existing.is_default = True
                existing.save(update_fields=["is_default"])
                connection = existing
            else:
                secret = _seal_into(None, organization, token, owner)
                connection = SandboxConnection.objects.create(
                    organization=organization, name=DEPLOYMENT_NAME, is_deployment=True, is_default=True,
                    secret=secret, created_by=owner)
            audit.record(actor=owner, organization=organization, action="sandbox_connection.registered",
                         target=connection, details={"deployment": True, "default": True,
                                                     "on_behalf_of": "owner"})
    except IntegrityError:  # a concurrent first use registered it
        return SandboxConnection.objects.filter(organization=organization, is_default=True).first()
    return connection


def reseal_deployment_token(token: str) -> int:
    """After `sandbox_token --rotate`: every organization's copy of the own sandboxd's token, re-sealed."""
    count = 0
    for connection in SandboxConnection.objects.filter(is_deployment=True).select_related("organization", "secret"):
        with transaction.atomic():
            secret = _seal_into(connection.secret, connection.organization, token, connection.created_by)
            if connection.secret_id is None:
                connection.secret = secret
                connection.save(update_fields=["secret"])
            audit.record(actor=None, organization=connection.organization, action="sandbox_connection.rotated",
                         target=connection, details={"deployment": True})
        count += 1
    return count


# ------------------------------------------------------------------ operators' connections


def register(*, actor: Actor, name: str, url: str, secret_id: Any, make_default: bool = False,
             kind: str = SANDBOXD) -> SandboxConnection:
    actor.require(MANAGE)
    kind = (kind or SANDBOXD).strip().lower()
    if kind not in KINDS:
        raise _problem("kind", "Choose what answers at the URL: 'sandboxd' or 'daytona'.")
    name = (name or "").strip()
    if not name or len(name) > 80:
        raise _problem("name", "Give the connection a name of 1-80 characters.")
    if name == DEPLOYMENT_NAME:
        raise _problem("name", f"{DEPLOYMENT_NAME!r} is the name of the deployment's own sandbox.")
    url = (url or "").strip()
    if not url.lower().startswith(("http://", "https://")) or len(url) > 2000:
        raise _problem("url", "Give the sandbox service's http(s) URL." if kind == SANDBOXD else
                       "Give the Daytona API's http(s) URL (https://app.daytona.io/api for Daytona's cloud).")
    try:
        netguard.check_url_blocking(url, allowance=SANDBOX_HOSTS)
    except netguard.Refused as exc:
        raise _problem("url", str(exc)) from None
    secret = _org_secret(actor, secret_id)
    try:
        with transaction.atomic():
            if make_default:
                SandboxConnection.objects.filter(organization=actor.organization, is_default=True).update(
                    is_default=False)
            connection = SandboxConnection.objects.create(
                organization=actor.organization, name=name, kind=kind, url=url, secret=secret,
                is_default=make_default, created_by=actor.user)
            audit.record(actor=actor.user, organization=actor.organization, action="sandbox_connection.registered",
                         target=connection, details={"default": make_default, "kind": kind},
                         ip_address=actor.extra.get("ip"))
    except IntegrityError:
        raise Conflict(f"A sandbox connection named {name!r} already exists.", details={"field": "name"}) from None
    return connection


def _org_secret(actor: Actor, secret_id: Any) -> Secret:
    try:
        pk = uuid.UUID(str(secret_id))
    except ValueError:
        raise _problem("secret_id", "Choose the secret holding the service's token.") from None
    secret = Secret.objects.filter(organization=actor.organization, pk=pk).first()
    if secret is None:  # another organization's secret reads the same as a missing one
        raise _problem("secret_id", "No such secret in this organization.")
    return secret


def make_default(*, actor: Actor, connection: SandboxConnection) -> SandboxConnection:
    actor.require(MANAGE)
    with transaction.atomic():
        SandboxConnection.objects.filter(organization=actor.organization, is_default=True).exclude(
            pk=connection.pk).update(is_default=False)
        SandboxConnection.objects.filter(pk=connection.pk).update(is_default=True)
        audit.record(actor=actor.user, organization=actor.organization, action="sandbox_connection.made_default",
                     target=connection, ip_address=actor.extra.get("ip"))
    connection.is_default = True
    return connection


def delete(*, actor: Actor, connection: SandboxConnection) -> None:
    """The workspaces it ran stay listed and readable (their files are kept here); agents naming it are
    refused at their next publish, and their runs get no workspace until an operator fixes it."""
    actor.require(MANAGE)
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="sandbox_connection.deleted",
                     target=connection, ip_address=actor.extra.get("ip"))
        connection.delete()


def get(organization_id: Any, connection_id: Any) -> SandboxConnection:
    """One of this organization's connections (another organization's id is a 404, never a hint)."""
    try:
        pk = uuid.UUID(str(connection_id))
    except ValueError:
        raise NotFound("Sandbox connection not found.") from None
    connection = SandboxConnection.objects.filter(organization_id=organization_id, pk=pk).select_related(
        "secret").first()
    if connection is None:
        raise NotFound("Sandbox connection not found.")
    return connection


def client_for(connection: SandboxConnection) -> SandboxdClient:
    """A client holding the connection's token (revealed here, kept in memory only)."""
    if connection.secret is None:
        raise ConnectionUnavailable(f"The sandbox connection {connection.name!r} has no credential.")
    token = vault.reveal(connection.secret)
    if connection.is_deployment:
        if not settings.SANDBOXD_URL:
            raise ConnectionUnavailable("This deployment no longer runs its own sandbox service (SANDBOXD_URL).")
        return SandboxdClient(settings.SANDBOXD_URL, token, guarded=False)
    if connection.kind == DAYTONA:
        return DaytonaClient(connection.url, token)
    return SandboxdClient(connection.url, token, guarded=True)


def for_run(organization: Organization, connection_id: str | None) -> SandboxConnection:
    """The connection a run's `service` workspace uses: the named one, else the organization's default."""
    if connection_id:
        try:
            return get(organization.pk, connection_id)
        except NotFound:
            raise ConnectionUnavailable(f"The sandbox connection {connection_id} no longer exists.") from None
    connection = ensure_default(organization)
    if connection is None:
        raise ConnectionUnavailable("This organization has no sandbox connection.")
    return connection


# ------------------------------------------------------------------ publish


def publish_problems(config: Any, organization: Organization) -> list[tuple[str, str]]:
    """(config field, message) for a `service` binding the organization cannot run; [] for `state`."""
    if getattr(config, "backend", "state") != "service":
        return []
    connection_id = getattr(config, "connection_id", None)
    if connection_id:
        try:
            connection = get(organization.pk, connection_id)
        except NotFound:
            return [("connection_id", f"The sandbox connection {connection_id} no longer exists in this "
                                      "organization; choose another one in Settings → Sandboxes.")]
    else:
        found = ensure_default(organization)
        if found is None:
            if SandboxConnection.objects.filter(organization=organization).exists():
                return [("connection_id", "This organization has no default sandbox connection; choose one "
                                          "or mark one as the default in Settings → Sandboxes.")]
            return [("backend", "This organization has no sandbox connection registered, so a service "
                                "workspace cannot be published; ask an operator to register one in "
                                "Settings → Sandboxes, or choose backend 'state' (stored files).")]
        connection = found
    if connection.secret_id is None:
        return [("connection_id", f"The sandbox connection {connection.name!r} has no credential; an operator "
                                  "must give it the service's token in Settings → Sandboxes.")]
    runtime = getattr(config, "runtime", None)
    if runtime:
        return _runtime_problems(connection, str(runtime))
    return []


def _runtime_problems(connection: SandboxConnection, runtime: str) -> list[tuple[str, str]]:
    """A runtime must be one the connection's service reports now (read live: a stored copy would offer
    one the service has stopped allowing)."""
    from workspaces.client import SandboxdError

    try:
        offered = [str(item.get("alias")) for item in client_for(connection).runtimes_sync()]
    except (SandboxdError, ConnectionUnavailable) as exc:
        return [("runtime", f"The runtimes of {connection.name!r} could not be read ({exc}); publish again once "
                            "the sandbox service answers, or leave runtime empty for its default.")]
    if runtime not in offered:
        return [("runtime", f"{connection.name!r} offers no runtime {runtime!r}; it offers: "
                            f"{', '.join(offered) or 'none'}.")]
    return []
