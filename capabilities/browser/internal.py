"""The deployment's own services, which no page in the agents' browser ever reaches, whatever anyone listed.

Who opens what (issue 37):
- an agent author's `allowed_domains` narrows where the browser may go; it never opens an internal address;
- the operator's BROWSER_ALLOWED_PRIVATE_HOSTS opens a private host (an intranet to browse), and only for the
  agents whose `allowed_domains` also names it (`policy.RequestPolicy`);
- this module's list opens to nobody: the browser's DevTools (every tab of every organization, with its URL and
  the socket that drives it), sandboxd, the web server, PostgreSQL, Redis and a private object store.

A service is compared by resolved address and port. A service on this machine (`localhost`, a unix socket's
server, which usually listens on its loopback port too, or a server bound to every address) is every local
spelling of it: `localhost:5432`, `127.0.0.2:5432`, `[::1]:5432`, `0.0.0.0:5432` and this host's own
addresses. A unix socket is no address a page can name.

Where the browser runs on another machine (docker-compose's `browser`, a hosted browser), a loopback address in
a page is the browser's machine, where nothing but the browser listens (DevTools, and the relay that publishes
it): every local address is refused there, and every port of the browser service's own host.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

logger = logging.getLogger(__name__)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
THIS_MACHINE = ""  # a service's host when it is "every address of this machine"
_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443, "redis": 6379, "rediss": 6379}
BROWSER_DEFAULT_PORT = 9222  # config.launcher's, which the capability does not import (it sits below it)
_ZERO_NET = ipaddress.ip_network("0.0.0.0/8")  # "this network": Linux connects 0.0.0.0 to its own loopback


@dataclass(frozen=True)
class Service:
    name: str
    host: str  # THIS_MACHINE, an address or a name
    port: int
    private_only: bool = False  # a name that is public elsewhere (the site's own URL, a cloud object store)


def address(ip: str) -> Address:
    """An address in the one form it is compared in (an IPv4-mapped IPv6 address is its IPv4 one)."""
    parsed = ipaddress.ip_address(ip.strip("[]").split("%")[0])
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        return parsed.ipv4_mapped
    return parsed


def is_local(ip: Address) -> bool:
    """Loopback or unspecified: whatever a page calls this, it is the browser's own machine."""
    return ip.is_loopback or ip.is_unspecified or (isinstance(ip, ipaddress.IPv4Address) and ip in _ZERO_NET)


@functools.lru_cache(maxsize=1)
def own_addresses() -> frozenset[Address]:
    """This machine's own addresses (a server bound to every address answers on them as on loopback)."""
    found: set[Address] = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None):
            found.add(address(str(info[4][0])))
    except (OSError, ValueError):
        logger.debug("own addresses", exc_info=True)
    return frozenset(found)


def _from_url(name: str, url: str, *, private_only: bool = False) -> Service | None:
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    if not parts.hostname or not port:
        return None  # a unix socket (redis's unix://), or no URL at all
    return Service(name, parts.hostname, port, private_only)


def _databases() -> list[Service]:
    found = []
    for alias in getattr(settings, "DATABASES", {}).values():
        host = str(alias.get("HOST") or "")
        port = int(alias.get("PORT") or 5432)
        # No host or a socket directory: libpq's unix socket, and the TCP port the server usually also opens here.
        found.append(Service("PostgreSQL", THIS_MACHINE if not host or host.startswith("/") else host, port))
    return found


def services(browser_endpoint: str = "") -> list[Service]:
    """Every service of this deployment a page must never reach, read from the settings now."""
    found: list[Service | None] = [
        _from_url("the browser's DevTools", browser_endpoint),
        # `make run`'s browser service on this machine, which another agent's browse may be using.
        Service("the browser's DevTools", THIS_MACHINE,
                int(os.environ.get("BROWSER_CDP_PORT") or BROWSER_DEFAULT_PORT) or BROWSER_DEFAULT_PORT),
        _from_url("sandboxd", str(getattr(settings, "SANDBOXD_URL", "") or "")),
        Service("this deployment's web server", THIS_MACHINE, int(getattr(settings, "PORT", 8000))),
        _from_url("this deployment's web server", str(getattr(settings, "FRONTEND_URL", "") or ""),
                  private_only=True),
        *_databases(),
        _from_url("Redis", str(getattr(settings, "REDIS_URL", "") or "")),
        _from_url("Redis", str(getattr(settings, "BROKER_REDIS_URL", "") or "")),
        _from_url("the object store", str(getattr(settings, "AWS_S3_ENDPOINT_URL", "") or ""), private_only=True),
    ]
    return list(dict.fromkeys(service for service in found if service is not None))


def _here(ips: set[Address], own: frozenset[Address]) -> bool:
    return any(is_local(ip) or ip in own for ip in ips)


Resolver = Callable[[str], Awaitable[list[str]]]


class DeploymentServices:
    """The refusals of one browse. `resolve` is the policy's (cached, and the one tests replace)."""

    def __init__(self, resolve: Resolver, browser_endpoint: str = "") -> None:
        self._resolve = resolve
        self.browser_endpoint = browser_endpoint

    async def _addresses(self, host: str) -> set[Address]:
        try:
            return {address(ip) for ip in await self._resolve(host)}
        except (ValueError, OSError):
            return set()  # a service whose name does not resolve from here is reached by no page by that name

    async def refusal(self, ip: str, port: int) -> str | None:
        """Why a page may not reach `ip`:`port` whatever the operator listed, or None."""
        target = address(ip)
        # The first call may ask the resolver for this host's name: off the event loop.
        own = own_addresses() if own_addresses.cache_info().currsize else await asyncio.to_thread(own_addresses)
        browser = _from_url("the browser's DevTools", self.browser_endpoint)
        if browser is not None:
            browser_ips = await self._addresses(browser.host)
            if browser_ips and not _here(browser_ips, own):
                if is_local(target):
                    return (f"{ip} is the browser's own machine, where only the browser itself listens; a page "
                            "never reaches it.")
                # Only a private one: a hosted browser's public address may be a CDN's, shared with many sites.
                if target in browser_ips and target.is_private:
                    return f"{ip} is the browser service's host; a page never reaches it."
        target_here = is_local(target) or target in own
        for service in services(self.browser_endpoint):
            if service.port != port:
                continue
            if service.private_only and not (target.is_private or target_here):
                continue
            if service.host == THIS_MACHINE:
                hit = target_here
            else:
                ips = await self._addresses(service.host)
                hit = target in ips or (target_here and _here(ips, own))
            if hit:
                return (f"{ip}:{port} is {service.name} of this deployment; a page never reaches it, whatever "
                        "allowed_domains or BROWSER_ALLOWED_PRIVATE_HOSTS lists.")
        return None

