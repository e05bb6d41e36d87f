"""Registering remote agents: the card is read and validated on every save, through netguard.

Who may do what (the catalog's "Agents remotos por A2A"):
- register: `agents:edit`; a key needs `secrets:view` (the caller must be able to use that vault secret);
- update or delete: whoever registered it, or someone holding `agents:edit_any`; an update also needs to be
  able to use the registration's key, because an update decides where that key goes;
- an update whose card moves the agent to another host is audited with both hosts.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from agenticos import audit, netguard, vault
from agenticos.errors import Conflict, Forbidden, Invalid
from agenticos.tenancy import Actor
from capabilities.custom_tools.services import credential_for
from capabilities.remote_agents import client
from capabilities.remote_agents.models import RemoteAgent


def _problem(field: str, message: str) -> Invalid:
    return Invalid(message, details={"problems": [{"field": field, "message": message}]})


def check_address(url: str, *, keyed: bool, field: str = "card_url") -> None:
    """The shape rules, before anything is sent: http(s), no userinfo, https when a key goes there."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        raise _problem(field, "Give the agent card's http(s) URL.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _problem(field, "Give the agent card's http(s) URL.")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise _problem(field, "A URL with a user name or password is refused: put the credential in the vault "
                              "and choose it as the key.")
    if keyed and parts.scheme != "https":
        listed = {netguard.domain_key(h) for h in settings.REMOTE_AGENT_PLAIN_HTTP_HOSTS if h}
        if netguard.domain_key(parts.hostname) not in listed:
            raise _problem(field, "A key is only sent over https: this address is plain http.")


def _read(card_url: str, key: str | None) -> client.ReadCard:
    check_address(card_url, keyed=key is not None)
    try:
        read = async_to_sync(client.read_card)(card_url, key=key)
    except netguard.Refused as exc:
        raise _problem("card_url", str(exc)) from None
    except client.CardProblem as exc:
        raise _problem("card_url", str(exc)) from None
    check_address(read.endpoint_url, keyed=key is not None)
    try:
        netguard.check_url_blocking(read.endpoint_url)
    except netguard.Refused as exc:
        raise _problem("card_url", f"The card's endpoint is refused: {exc}") from None
    return read


def _secret_for(actor: Actor, secret_id: Any) -> Any:
    """The vault secret the registration will send, one the actor may use (custom tools' rule), reported on
    this API's own field name."""
    try:
        return credential_for(actor, secret_id)
    except Invalid:
        raise _problem("secret_id", "No such secret in this organization.") from None


def _key_of(secret: Any) -> str | None:
    return vault.reveal(secret) if secret is not None else None


def create_remote_agent(*, actor: Actor, card_url: Any, secret_id: Any = None, name: Any = None) -> RemoteAgent:
    actor.require("agents:edit")
    card_url = str(card_url or "").strip()
    secret = _secret_for(actor, secret_id)
    read = _read(card_url, _key_of(secret))
    row = RemoteAgent(organization=actor.organization, name=(str(name or "").strip() or read.card.name)[:120],
                      description=read.card.description[:4000], card_url=card_url, endpoint_url=read.endpoint_url,
                      card=read.data, secret=secret, created_by=actor.user)
    try:
        with transaction.atomic():
            row.save()
            audit.record(actor=actor.user, organization=actor.organization, action="remote_agent.created",
                         target=row, details={"host": urlsplit(read.endpoint_url).hostname,
                                              "keyed": secret is not None},
                         ip_address=actor.extra.get("ip"))
    except IntegrityError:
        raise Conflict(f"A remote agent named {row.name!r} already exists.", details={"field": "name"}) from None
    return row


def _may_change(actor: Actor, row: RemoteAgent) -> None:
    actor.require("agents:edit")
    if row.created_by_id != actor.user_id and not actor.has("agents:edit_any"):
        raise Forbidden("Only whoever registered this remote agent, or someone who edits every agent, may change it.")


def can_change(actor: Actor, row: RemoteAgent) -> bool:
    """Whether `actor` may update or delete `row` (the rule above, for showing a screen's controls)."""
    try:
        _may_change(actor, row)
    except Forbidden:
        return False
    return True


def update_remote_agent(*, actor: Actor, row: RemoteAgent, changes: dict[str, Any]) -> RemoteAgent:
    """Read the card again (at its new URL, with its new key) and save what it says."""
    _may_change(actor, row)
    if row.secret_id is not None:
        actor.require("secrets:view")  # an update decides where the key goes: only someone who may use it
    card_url = str(changes.get("card_url") or row.card_url).strip()
    secret = _secret_for(actor, changes["secret_id"]) if "secret_id" in changes else row.secret
    read = _read(card_url, _key_of(secret))
    old_host = urlsplit(row.endpoint_url).hostname
    new_host = urlsplit(read.endpoint_url).hostname
    old_card_host = urlsplit(row.card_url).hostname
    row.card_url, row.endpoint_url, row.card, row.secret = card_url, read.endpoint_url, read.data, secret
    row.description = read.card.description[:4000]
    if changes.get("name"):
        row.name = str(changes["name"]).strip()[:120]
    row.checked_at = timezone.now()
    try:
        with transaction.atomic():
            row.save()
            audit.record(actor=actor.user, organization=actor.organization, action="remote_agent.updated",
                         target=row, details={"keyed": secret is not None}, ip_address=actor.extra.get("ip"))
            if old_host != new_host or old_card_host != urlsplit(card_url).hostname:
                # That host now receives the requests, and the key.
                audit.record(actor=actor.user, organization=actor.organization, action="remote_agent.host_changed",
                             target=row, details={"from": old_host, "to": new_host,
                                                  "card_from": old_card_host, "card_to": urlsplit(card_url).hostname},
                             ip_address=actor.extra.get("ip"))
    except IntegrityError:
        raise Conflict(f"A remote agent named {row.name!r} already exists.", details={"field": "name"}) from None
    return row


def delete_remote_agent(*, actor: Actor, row: RemoteAgent) -> None:
    _may_change(actor, row)
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="remote_agent.deleted", target=row,
                     ip_address=actor.extra.get("ip"))
        row.delete()


def remote_agent_json(row: RemoteAgent) -> dict[str, Any]:
    return {"id": str(row.pk), "name": row.name, "description": row.description,
            "card_url": client.shown_url(row.card_url), "endpoint_url": client.shown_url(row.endpoint_url),
            "secret_id": str(row.secret_id) if row.secret_id else None,
            "created_by": row.created_by_id, "created_at": row.created_at.isoformat(),
            "checked_at": row.checked_at.isoformat()}
