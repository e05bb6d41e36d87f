"""Where the browser may go: every request a page makes is checked here before Chromium sends it.

The checks are netguard's address rules (`agenticos.netguard`: the name resolved through
`netguard.resolve`, metadata always refused, private / loopback / link-local refused), in three lists:
- the binding's `allowed_domains` (the agent author's) narrows the hosts a page may be on; it opens nothing;
- the operator's BROWSER_ALLOWED_PRIVATE_HOSTS (hosts or networks, as netguard's TOOL_ALLOWED_PRIVATE_HOSTS)
  opens a private host, for an agent whose `allowed_domains` also names it: an internal address is the
  operator's decision, never an agent author's;
- `internal.py`'s, which opens to nobody: the browser's DevTools, sandboxd, the web server, PostgreSQL, Redis.
A metadata address is never reached.

Enforced in the browser by request interception (CDP `Fetch`, see `session.py`), so it holds for every hop
of a redirect, a page's own `fetch()`, an iframe, an image, a WebSocket — not only for the URL the model names.
Chromium resolves a name again itself: a name that answers differently to it (DNS rebinding) is the gap this
leaves; Chromium's DevTools refuses any Host header that is not an address or `localhost`, so it stays closed.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agenticos import netguard
from capabilities.browser.internal import DeploymentServices

# Schemes that never reach the network, so there is no address to check.
LOCAL_SCHEMES = frozenset({"data", "blob", "about"})
NETWORK_SCHEMES = frozenset({"http", "https", "ws", "wss"})
RESOLVE_CACHE_SECONDS = 30.0
PRIVATE_HOSTS = "BROWSER_ALLOWED_PRIVATE_HOSTS"
_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}


def normalize_pattern(entry: str) -> str:
    """An `allowed_domains` entry: a host, or a pattern like `*.example.com`. Raises ValueError."""
    raw = str(entry).strip().lower().rstrip(".")
    if not raw:
        raise ValueError("an empty entry never matches")
    if "://" in raw or "/" in raw:
        raise ValueError(f"{entry!r}: give a host name or a pattern like *.example.com, without scheme or path")
    if raw.count(":") == 1:
        raise ValueError(f"{entry!r}: give the host without a port")
    if raw.startswith("*."):
        return "*." + netguard.domain_key(raw[2:])
    if "*" in raw:
        raise ValueError(f"{entry!r}: a wildcard is only allowed as the first label (*.example.com)")
    return netguard.domain_key(raw)


def host_matches(host: str, patterns: list[str]) -> bool:
    key = netguard.domain_key(host.strip("[]"))
    for pattern in patterns:
        if pattern.startswith("*."):
            if key.endswith(pattern[1:]) or key == pattern[2:] or fnmatch.fnmatchcase(key, pattern):
                return True
        elif key == pattern:
            return True
    return False


@dataclass
class RequestPolicy:
    """One browse's rules. `refusal(url)` is None when the request may go, else why not (safe to show)."""

    allowed_domains: list[str] | None = None
    browser_endpoint: str = ""  # the browse's DevTools address (cdp_url, or a hosted browser's): never a page's
    _resolved: dict[str, tuple[float, list[str]]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)  # every URL refused in this browse (tests, the step view)
    reasons: list[str] = field(default_factory=list)  # why, in the same order

    async def _addresses(self, host: str) -> list[str]:
        literal = host.strip("[]")
        try:
            ipaddress.ip_address(literal.split("%")[0])
            return [literal]
        except ValueError:
            pass
        cached = self._resolved.get(host)
        if cached is not None and time.monotonic() - cached[0] < RESOLVE_CACHE_SECONDS:
            return cached[1]
        ips = await netguard.resolve(host)
        self._resolved[host] = (time.monotonic(), ips)
        return ips

    async def refusal(self, url: str) -> str | None:
        scheme = urlsplit(url).scheme.lower()
        if scheme in LOCAL_SCHEMES:
            return None
        if scheme not in NETWORK_SCHEMES:
            return f"{scheme or 'this'}: addresses are not opened by the browser."
        parts = urlsplit(url)
        host = parts.hostname or ""
        if not host:
            return "The address has no host."
        try:
            port = parts.port or _DEFAULT_PORTS[scheme]
        except ValueError:
            return "The address has no valid port."
        listed = bool(self.allowed_domains) and host_matches(host, self.allowed_domains or [])
        if self.allowed_domains is not None and not listed:
            return f"{host} is not in this agent's allowed_domains."
        try:
            ips = await self._addresses(host)
        except (ValueError, OSError):
            return f"The host {host} does not resolve."
        deployment = DeploymentServices(self._addresses, self.browser_endpoint)
        for ip in ips:
            if netguard.is_metadata(ip):
                return f"{host} is a cloud metadata address ({ip}); that is always refused."
            # Before the operator's list: what it names never opens these.
            reason = await deployment.refusal(ip, port)
            if reason is not None:
                return reason
            if netguard.is_private(ip) and not (listed and netguard.allowed_private(host, ip, PRIVATE_HOSTS, port)):
                return (f"{host} is inside this deployment's network ({ip}: a private, loopback or link-local "
                        f"address); a page goes there only when the operator lists the host in {PRIVATE_HOSTS} "
                        "and this agent's allowed_domains names it.")
        return None

    async def check(self, url: str) -> str | None:
        reason = await self.refusal(url)
        if reason is not None:
            self.refused.append(url)
            self.reasons.append(reason)
        return reason
