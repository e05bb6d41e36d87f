"""The audit trail leaves the building: each organization's audit events, in id order, POSTed as JSON to its SIEM's
HTTPS webhook through the outbound guard, signed, at-least-once — or sent as RFC 5424 syslog over TCP/TLS
(identity.syslog: `syslog+tls://host:port`, the same cursor, backlog and signing secret).

- The body is `{"organization": id, "events": [...]}`; each event carries its `id`, so a receiver that sees one
  twice (a retry after a lost acknowledgement) drops the copy.
- `X-AgenticOS-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the stream's secret (sealed in
  the vault), the scheme Stripe's and Slack's webhooks use, so SIEM collectors already know how to check it.
- The cursor (`delivered_up_to`) moves only after a 2xx: while the receiver is down nothing is lost, the backlog is
  the events after it. A Celery beat task (identity.tasks.flush_audit_streams) drains every stream; a failing one
  is tried again on the next beat.
- Events are sent once they are `SETTLE_SECONDS` old: ids are taken at insert and a slower transaction may commit a
  lower id after a higher one; waiting past the longest transaction keeps the cursor from stepping over it.

Hand-written: no well-kept library ships a signed-webhook sender for Django (svix is a hosted service).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import secrets as pysecrets
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from agenticos import audit, hostports, netguard, vault
from agenticos.errors import Invalid, NotFound
from agenticos.models import AuditEvent
from identity import audit_log, syslog
from identity.models import AuditStream

if TYPE_CHECKING:
    from agenticos.tenancy import Actor

ALLOWANCE = "AUDIT_STREAM_ALLOWED_PRIVATE_HOSTS"  # receivers an operator allows on internal addresses
BATCH = 200
SETTLE_SECONDS = 30
TIMEOUT_SECONDS = 10
SIGNATURE_HEADER = "X-AgenticOS-Signature"


def _listed_hosts() -> set[str]:
    """The allowance's host names, with or without a port (`siem.internal:8514`)."""
    return {hostports.parse(entry).host.lower() for entry in getattr(settings, ALLOWANCE, [])}


def _invalid(field: str, message: str) -> Invalid:
    return Invalid("The audit stream settings are invalid.", details={"problems": [
        {"field": field, "message": message}]})


def configure(*, actor: Actor, url: str, enabled: bool = True) -> tuple[AuditStream, str]:
    """Create or change the organization's stream; returns it and, when it is new, its signing secret (shown
    once). A new stream starts at the present: the trail before it is the export's (Settings → Audit)."""
    actor.require("signin:manage")
    url = (url or "").strip()
    netguard_url = _checked_destination(url)
    try:
        netguard.check_url_blocking(netguard_url, allowance=ALLOWANCE)
    except netguard.Refused as exc:
        raise _invalid("url", f"That address is refused: {exc}") from None
    raw = ""
    with transaction.atomic():
        stream = AuditStream.objects.select_for_update().filter(organization=actor.organization).first()
        if stream is None:
            raw = "whsec_" + pysecrets.token_urlsafe(32)
            sealed = vault.seal(actor.organization.pk, raw)
            last = AuditEvent.objects.filter(organization=actor.organization).order_by("-id").first()
            stream = AuditStream(organization=actor.organization, key_version=sealed.key_version,
                                 wrapped_key=sealed.wrapped_key, ciphertext=sealed.ciphertext,
                                 secret_hint=sealed.hint, delivered_up_to=last.pk if last else 0)
        stream.url, stream.enabled, stream.updated_at = url, bool(enabled), timezone.now()
        stream.save()
        audit.record(actor=actor.user, organization=actor.organization, action="audit.stream_configured",
                     target=stream, target_name=url[:300], details={"enabled": stream.enabled, "new": bool(raw)},
                     ip_address=actor.extra.get("ip"))
    return stream, raw


def _checked_destination(url: str) -> str:
    """The URL the outbound guard checks for a receiver: an https:// webhook, or syslog over TLS; plain http and
    plain TCP syslog only for a receiver the operator allowed inside the network (like SSO_ALLOWED_PRIVATE_HOSTS)."""
    wanted = "The receiver is an https:// URL or syslog+tls://host:port."
    if syslog.is_syslog(url):
        try:
            target = syslog.destination(url)
        except ValueError as exc:
            raise _invalid("url", str(exc)) from None
        if not target.tls and target.host not in _listed_hosts():
            raise _invalid("url", wanted)
        return target.guard_url
    host = (urlsplit(url).hostname or "").lower()
    if not (url.startswith("https://") or (url.startswith("http://") and host in _listed_hosts())):
        raise _invalid("url", wanted)
    return url


def remove(*, actor: Actor) -> None:
    actor.require("signin:manage")
    stream = AuditStream.objects.filter(organization=actor.organization).first()
    if stream is None:
        raise NotFound("No audit stream is configured.")
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="audit.stream_removed",
                     target=stream, target_name=stream.url[:300], ip_address=actor.extra.get("ip"))
        stream.delete()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def _pending(stream: AuditStream, settle_seconds: int) -> list[AuditEvent]:
    cutoff = timezone.now() - dt.timedelta(seconds=settle_seconds)
    return list(AuditEvent.objects.filter(organization_id=stream.organization_id, pk__gt=stream.delivered_up_to,
                                          created_at__lte=cutoff).select_related("actor").order_by("id")[:BATCH])


def deliver(stream_id: int, *, settle_seconds: int = SETTLE_SECONDS) -> int:
    """Send the stream's next batch; returns how many events the receiver acknowledged (0 when none was due or it
    failed — then the cursor stays and the batch goes again next time)."""
    with transaction.atomic():
        stream = AuditStream.objects.select_for_update(skip_locked=True).filter(pk=stream_id, enabled=True).first()
        if stream is None:
            return 0  # gone, off, or another worker is delivering it
        events = _pending(stream, settle_seconds)
        if not events:
            return 0
        # Not vault.reveal: a `secret.used` event of the stream's own key would itself be streamed, signed with
        # the key again — an event per delivery, for ever.
        secret = vault.open_sealed(stream.organization_id, stream.key_version, bytes(stream.wrapped_key),
                                   bytes(stream.ciphertext))
        error = (_send_syslog(stream, events, secret) if syslog.is_syslog(stream.url)
                 else _send_webhook(stream, events, secret))
        stream.last_attempt_at = timezone.now()
        stream.last_error = error[:300]
        if not error:
            stream.delivered_up_to = events[-1].pk
        stream.save(update_fields=["last_attempt_at", "last_error", "delivered_up_to"])
    return 0 if error else len(events)


def _send_webhook(stream: AuditStream, events: list[AuditEvent], secret: str) -> str:
    body = json.dumps({"organization": stream.organization_id, "events": [audit_log.as_row(e) for e in events]},
                      cls=DjangoJSONEncoder, separators=(",", ":")).encode()
    headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(secret, int(time.time()), body),
               "X-AgenticOS-Delivery": f"{events[0].pk}-{events[-1].pk}"}
    return _post(stream.url, body, headers)


def _send_syslog(stream: AuditStream, events: list[AuditEvent], secret: str) -> str:
    hostname = syslog.deployment_hostname()
    messages = [syslog.message(audit_log.as_row(e), organization_id=stream.organization_id, secret=secret,
                               hostname=hostname) for e in events]
    return syslog.send(stream.url, messages, allowance=ALLOWANCE, timeout=TIMEOUT_SECONDS)


def _post(url: str, body: bytes, headers: dict[str, str]) -> str:
    """'' on a 2xx, else why not (never the body or the secret)."""
    try:
        with netguard.pinned_sync_client(allowance=ALLOWANCE, home=url, timeout=TIMEOUT_SECONDS) as client:
            answer = client.post(url, content=body, headers=headers)
    except netguard.Refused as exc:
        return f"refused: {exc}"
    except Exception as exc:  # the transport's errors: the receiver is down or unreachable; try again later
        return "refused by the outbound guard" if netguard.refusal_in(exc) else f"unreachable ({type(exc).__name__})"
    return "" if 200 <= answer.status_code < 300 else f"HTTP {answer.status_code}"


def drain(stream_id: int, *, settle_seconds: int = SETTLE_SECONDS, max_batches: int = 50) -> int:
    sent = total = 0
    for _ in range(max_batches):
        sent = deliver(stream_id, settle_seconds=settle_seconds)
        total += sent
        if sent < BATCH:
            break
    return total


def stream_ids() -> list[Any]:
    return list(AuditStream.objects.filter(enabled=True).values_list("pk", flat=True))
