"""Where the browser may go: every request a page makes is checked here before Chromium sends it.

The checks are netguard's address rules (`capabilities.netguard`: the name resolved through
`netguard.resolve`, metadata always refused, private / loopback / link-local refused) with one difference:
the allowance is the binding's own `allowed_domains`, not an operator setting. A host listed there may be
reached on an internal address (an internal tool to browse); a metadata address never is.

Enforced in the browser by request interception (CDP `Fetch`, see `session.py`), so it holds for every hop
of a redirect, a page's own `fetch()`, an iframe, an image — not only for the URL the model names.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from capabilities import netguard
from capabilities.netguard import _ssrf  # netguard's own copy of pydantic-ai's address predicates

# Schemes that never reach the network, so there is no address to check.
LOCAL_SCHEMES = frozenset({"data", "blob", "about"})
NETWORK_SCHEMES = frozenset({"http", "https", "ws", "wss"})
RESOLVE_CACHE_SECONDS = 30.0


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
        host = urlsplit(url).hostname or ""
        if not host:
            return "The address has no host."
        listed = bool(self.allowed_domains) and host_matches(host, self.allowed_domains or [])
        if self.allowed_domains is not None and not listed:
            return f"{host} is not in this agent's allowed_domains."
        try:
            ips = await self._addresses(host)
        except (ValueError, OSError):
            return f"The host {host} does not resolve."
        for ip in ips:
            if _ssrf.is_cloud_metadata_ip(ip):
                return f"{host} is a cloud metadata address ({ip}); that is always refused."
            if _ssrf.is_private_ip(ip) and not listed:
                return (f"{host} is inside this deployment's network ({ip}: a private, loopback or link-local "
                        "address); only a host listed in allowed_domains may be browsed there.")
        return None

    async def check(self, url: str) -> str | None:
        reason = await self.refusal(url)
        if reason is not None:
            self.refused.append(url)
            self.reasons.append(reason)
        return reason
