"""The audit stream's syslog destination: each audit event as one RFC 5424 message, sent over TCP with TLS (RFC 5425,
`syslog+tls://host[:6514]`) or, to a receiver the operator allowed inside the network, plain TCP (RFC 6587,
`syslog+tcp://host:port`), both octet-counted (`<length> <message>`), the framing RFC 5425 requires.

A message: `<PRI>1 <time> <deployment host> agenticos - <action> [agenticos@32473 id="…" org="…" sig="…"] BOM<JSON>`.
- PRI: facility 13 ("log audit"), severity notice (5) for a failure (`…failed`), informational (6) otherwise.
- The structured data carries the event id (a receiver drops a copy it has seen: delivery is at-least-once), the
  organization, and `sig`, the hex HMAC-SHA256 of `"<id>.<JSON>"` with the stream's secret, so a collector can
  check an event came from this deployment even where the transport is plain TCP. 32473 is the private enterprise
  number RFC 5612 reserves for examples; an SD-ID `name@number` needs one.
- The message is the event as the webhook and the export carry it (identity.audit_log.as_row), UTF-8 JSON after a
  BOM (RFC 5424 §6.4).

Syslog over TCP has no application-level acknowledgement (RELP would; few SIEMs take it): a batch counts as
delivered once the connection took all its bytes and closed cleanly. A receiver that refuses the connection, fails
the TLS handshake or resets it keeps the backlog. The address is checked by the outbound guard and the connection
goes to the address it pinned, as the webhook's does; TLS verifies the receiver's name against the public CAs or
AUDIT_STREAM_CA_BUNDLE (an internal CA).

Hand-written: the maintained syslog handlers (the standard library's SysLogHandler, rfc5424-logging-handler, last
released 2019) are `logging` handlers that resolve and connect by themselves, past the outbound guard, and speak
neither RFC 5424 over TLS nor octet counting together with a per-message signature.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder

from agenticos import hostports, netguard

SCHEMES = {"syslog+tls": 6514, "syslog+tcp": 514}
FACILITY_LOG_AUDIT = 13
SEVERITY_NOTICE, SEVERITY_INFO = 5, 6
SD_ID = "agenticos@32473"
APP_NAME = "agenticos"
BOM = b"\xef\xbb\xbf"
_NOT_PRINTUSASCII = re.compile(r"[^\x21-\x7e]")


@dataclass(frozen=True)
class Destination:
    host: str
    port: int
    tls: bool

    @property
    def guard_url(self) -> str:
        """The URL the outbound guard checks for this host and port (it reads http(s) URLs)."""
        return f"https://{hostports.spell(self.host, self.port)}/"


def is_syslog(url: str) -> bool:
    return urlsplit(url).scheme.lower() in SCHEMES


def destination(url: str) -> Destination:
    """`syslog+tls://host[:port]` or `syslog+tcp://host:port`; ValueError for anything else (a path, a query, a
    user, a port out of range)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError("The scheme is syslog+tls:// or syslog+tcp://.")
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc or not parts.hostname:
        raise ValueError("Write syslog+tls://host:port, without a path, a query or a user.")
    port = parts.port or SCHEMES[scheme]  # parts.port raises ValueError for a port out of range
    return Destination(host=parts.hostname.lower(), port=port, tls=scheme == "syslog+tls")


def _sd_value(value: str) -> str:
    # RFC 5424 §6.3.3: inside PARAM-VALUE, '"', '\' and ']' are escaped with a backslash.
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


def _header_field(value: str, limit: int) -> str:
    return _NOT_PRINTUSASCII.sub("_", value)[:limit] or "-"


def signature(secret: str, event_id: Any, body: str) -> str:
    return hmac.new(secret.encode(), f"{event_id}.{body}".encode(), hashlib.sha256).hexdigest()


def message(row: dict[str, Any], *, organization_id: Any, secret: str, hostname: str) -> bytes:
    """One audit event (identity.audit_log.as_row) as an RFC 5424 message (not yet framed)."""
    body = json.dumps(row, cls=DjangoJSONEncoder, separators=(",", ":"), ensure_ascii=False)
    action = str(row.get("action") or "")
    severity = SEVERITY_NOTICE if action.endswith("failed") else SEVERITY_INFO
    timestamp = str(row["created_at"]).replace("+00:00", "Z")
    structured = (f'[{SD_ID} id="{_sd_value(str(row["id"]))}" org="{_sd_value(str(organization_id))}" '
                  f'sig="{signature(secret, row["id"], body)}"]')
    header = (f"<{FACILITY_LOG_AUDIT * 8 + severity}>1 {timestamp} {_header_field(hostname, 255)} {APP_NAME} - "
              f"{_header_field(action, 32)} {structured} ")
    return header.encode("ascii") + BOM + body.encode("utf-8")


def frame(payload: bytes) -> bytes:
    """RFC 6587 §3.4.1 octet counting (the framing RFC 5425 requires over TLS)."""
    return str(len(payload)).encode("ascii") + b" " + payload


def deployment_hostname() -> str:
    return urlsplit(settings.FRONTEND_URL).hostname or socket.gethostname()


@functools.lru_cache(maxsize=4)
def _tls_context(ca_bundle: str) -> ssl.SSLContext:
    if not ca_bundle:
        return netguard.shared_tls_context()  # type: ignore[no-any-return]
    context = ssl.create_default_context(cafile=ca_bundle)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def send(url: str, payloads: list[bytes], *, allowance: str, timeout: float) -> str:
    """'' once the receiver took every message, else why not (never a message or the secret)."""
    try:
        target = destination(url)
        pinned = netguard.check_url_blocking(target.guard_url, allowance=allowance)
    except netguard.Refused as exc:
        return f"refused: {exc}"
    except ValueError as exc:
        return f"refused: {exc}"
    data = b"".join(frame(p) for p in payloads)
    try:
        with socket.create_connection((pinned.ip, target.port), timeout=timeout) as raw:
            if target.tls:
                context = _tls_context(getattr(settings, "AUDIT_STREAM_CA_BUNDLE", "") or "")
                with context.wrap_socket(raw, server_hostname=target.host) as tls:
                    tls.sendall(data)
            else:
                raw.sendall(data)
                raw.shutdown(socket.SHUT_WR)
    except ssl.SSLCertVerificationError:
        return "the receiver's TLS certificate was not accepted"
    except (OSError, ssl.SSLError) as exc:  # refused, reset, timed out: the receiver is down; try again later
        return f"unreachable ({type(exc).__name__})"
    return ""
