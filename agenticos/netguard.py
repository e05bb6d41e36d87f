"""Outbound HTTP for tools whose URL someone else chose: SSRF checks with the resolved address pinned.

Shared by custom REST tools, web fetch, web search providers and MCP connections. The checks are
pydantic-ai's own (`pydantic_ai._ssrf`: metadata and private ranges, IPv6 transition forms, IDNA domain
keys); what this module adds is what `safe_download` cannot do: any method with a body, and a per-host
operator allowance (`TOOL_ALLOWED_PRIVATE_HOSTS`) instead of an all-or-nothing `allow_local`, because
internal APIs are a real need for custom tools.

Every hop (the first request and every redirect):
1. the host is resolved once; every answer is checked (metadata: always refused; private/loopback/
   link-local: refused unless the operator lists the host or the address);
2. the request is sent to the first checked address with the original `Host` header (the pin), so a
   DNS answer that changes between the check and the connect is never used;
3. credentials are dropped when a redirect leaves the origin;
4. the body is read as a stream and cut at `max_bytes`; encodings that cannot be bounded are refused.

Clients that speak a protocol of their own over HTTP (the MCP SDK: SSE streams, session endpoints,
in-origin redirects) get the same policy as a transport instead (`PinnedTransport`,
`pinned_client_factory`): every request they send is checked and sent to the checked address.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import ipaddress
import logging
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlparse, urlunparse

import httpx2
from django.conf import settings
from pydantic_ai import _ssrf

from agenticos import hostports

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
_QUERY_IN_LOG = re.compile(r"(https?://[^\s?\"']+)\?[^\s\"']*")


class _NoQueryStrings(logging.Filter):
    """httpx2 logs every request URL at INFO; a query string may carry a credential (the query auth family)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.msg = record.getMessage()
            record.args = None
        record.msg = _QUERY_IN_LOG.sub(r"\1?[query hidden]", str(record.msg))
        return True


logging.getLogger("httpx2").addFilter(_NoQueryStrings())
MAX_REDIRECTS = 5
_BODY_KEEPING_REDIRECTS = {307, 308}


class Refused(ValueError):
    """The address, domain or response is not one this deployment will talk to / read. Message is safe to show."""


class AddressRefused(Refused):
    """`str()` is safe to show anyone who may see the request fail; `hint`, when set, tells the operator what to
    set to allow the address (it names a setting of the deployment: for owners, admins and staff only, see
    `agenticos.tenancy.sees_deployment_settings`)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint

    def for_operator(self) -> str:
        return f"{self} {self.hint}".strip()


class Unresolvable(AddressRefused):
    """The name has no address (now, from here). Refused at connect; a save may accept it (see callers)."""


class DomainRefused(Refused):
    pass


class TooLarge(Refused):
    pass


@dataclass
class Fetched:
    status: int
    headers: httpx2.Headers
    content: bytes
    url: str  # the final URL after redirects (never carries an injected credential: see `safe_request`)
    hops: list[str] = field(default_factory=list)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        charset = "utf-8"
        ctype = self.headers.get("content-type", "")
        for part in ctype.split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")


async def resolve(hostname: str) -> list[str]:
    """DNS, in one place (tests replace it to prove the pin)."""
    return await _ssrf.resolve_hostname(hostname)


def domain_key(host: str) -> str:
    """The one spelling a host is compared in: lowercase, no root label, IDNA-encoded."""
    return _ssrf._domain_key(host)


# The operator allowances: one setting per family of outbound traffic, so listing an internal API for custom
# tools never lets a model profile (which sends its API key) reach it, and the other way round.
TOOL_HOSTS = "TOOL_ALLOWED_PRIVATE_HOSTS"
MODEL_HOSTS = "MODEL_ALLOWED_PRIVATE_HOSTS"
CHANNEL_HOSTS = "CHANNEL_ALLOWED_PRIVATE_HOSTS"
# mem0's list names the self-hosted servers the key may go to at all; a listed one may be private.
MEM0_HOSTS = "MEM0_ALLOWED_HOSTS"
# Families whose refusals reach members (a run's error, the Test connection and Knowledge pages): their message
# never names the setting, which only says how this deployment is run; the operator's instruction is the
# refusal's `hint`. The other families still name theirs in the message (read by builders and bot admins).
_NAMELESS = frozenset({MODEL_HOSTS})
_FAMILY_WORDS = {MODEL_HOSTS: "model providers"}


# ------------------------------------------------------------------ IPv6 forms that carry an IPv4 address
#
# A translating or dual-stack network delivers these to the IPv4 address inside them, so each is judged by that
# address (a private IPv4 inside is private; a public one is as reachable as the IPv4 itself). pydantic-ai's
# checks decode most of them but not IPv4-translated (`::ffff:0:a.b.c.d`, RFC 2765 SIIT), which passed as a
# public IPv6 address; this module decodes every form itself and asks `_ssrf` about the IPv4 it finds.
#
# Decisions, per form, for an embedded *public* IPv4:
# - mapped, translated, compatible, 6to4 and the NAT64 well-known prefix 64:ff9b::/96: allowed (on an
#   IPv6-only network DNS64 answers 64:ff9b::a.b.c.d for every public server, so refusing it would break them);
# - NAT64 local-use 64:ff9b:1::/48 (RFC 8215): what it reaches is the operator's translator's choice, so the
#   whole prefix is private (listable in the allowance like any internal range);
# - Teredo 2001::/32: refused whatever it carries (a relay through a third party's server is never a service's
#   address; `_ssrf` lists the whole prefix as private); its client IPv4 is still decoded for the message.
_IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")
_SIXTOFOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")


def _address(ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(ip.split("%")[0].strip("[]"))
    except ValueError:
        return None


def embedded_ipv4(ip: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address delivers to (see the forms above), or None."""
    address = _address(ip)
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    low32 = ipaddress.IPv4Address(address.packed[12:])
    if address in _TEREDO:
        return ipaddress.IPv4Address(int(low32) ^ 0xFFFFFFFF)  # RFC 4380: the client address, bits inverted
    if address in _SIXTOFOUR:
        return ipaddress.IPv4Address(address.packed[2:6])  # RFC 3056: bits 16-47
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # `::` and `::1` are themselves, not IPv4
        return low32
    if any(address in net for net in (_IPV4_MAPPED, _IPV4_TRANSLATED, _NAT64_WELL_KNOWN)):
        return low32
    return None


def is_metadata(ip: str) -> bool:
    """A cloud metadata address, also inside any IPv6 form that carries one."""
    inner = embedded_ipv4(ip)
    return _ssrf.is_cloud_metadata_ip(ip) or (inner is not None and _ssrf.is_cloud_metadata_ip(str(inner)))


def is_private(ip: str) -> bool:
    """A private, loopback, link-local or reserved address (anything not an address counts), also inside any IPv6
    form that carries one. Other guards (the browser's) should ask this, not `_ssrf`, to see the same forms."""
    address = _address(ip)
    if address is None or _ssrf.is_private_ip(ip):
        return True
    if isinstance(address, ipaddress.IPv6Address) and address in _NAT64_LOCAL_USE:
        return True
    inner = embedded_ipv4(ip)
    return inner is not None and _ssrf.is_private_ip(str(inner))


def allowed_private(hostname: str, ip: str, allowance: str = TOOL_HOSTS, port: int | None = None) -> bool:
    """Whether the operator's `allowance` list names `hostname` or holds `ip` (an address or a network, `[…]` as
    well), on `port` when the entry names one (`localhost:11434`: that port only; an entry with a port never
    admits a request whose port is unknown); shared by every family of outbound traffic, the browser's pages
    among them. A name entry admits that name only; an address entry admits any name resolving to it, on the
    same terms as the address itself (the connection goes to the checked address, so nothing more is reached)."""
    entries = list(getattr(settings, allowance, []) or [])
    host_key = domain_key(hostname.strip("[]"))
    address = ipaddress.ip_address(ip.split("%")[0])
    # A listed IPv4 network also admits its addresses in IPv6 clothing (the same destination).
    inner = embedded_ipv4(ip)
    for raw in entries:
        try:
            entry, entry_port = hostports.parse(str(raw))
        except ValueError:
            continue  # the settings refuse a malformed entry at start-up; a test's override is skipped
        if entry_port is not None and entry_port != port:
            continue
        try:
            network = ipaddress.ip_network(entry, strict=False)
            if address in network or (inner is not None and inner in network):
                return True
            continue
        except ValueError:
            pass
        if domain_key(entry) == host_key:
            return True
    return False


@dataclass
class Pinned:
    hostname: str
    ip: str
    port: int
    is_https: bool
    path: str


async def check_url(url: str, *, allowance: str = TOOL_HOSTS) -> Pinned:
    """Validate one URL and pick the address to connect to. Raises `AddressRefused`.

    `allowance` names the setting that lists the private hosts this traffic may reach."""
    try:
        hostname, path, port, is_https = _ssrf.extract_host_and_port(url)
    except ValueError as exc:
        raise AddressRefused(str(exc)) from None
    literal = hostname.strip("[]")
    try:
        ipaddress.ip_address(literal.split("%")[0])
        ips = [literal]
    except ValueError:
        try:
            ips = await resolve(hostname)
        except ValueError as exc:
            raise Unresolvable(f"The host {hostname!r} does not resolve.") from exc
    for ip in ips:
        if is_metadata(ip):
            raise AddressRefused(f"{hostname} resolves to a cloud metadata address ({ip}); that is always refused.")
        if is_private(ip) and not allowed_private(hostname, ip, allowance, port):
            raise _private_refusal(hostname, ip, port, allowance)
    return Pinned(hostname=hostname, ip=ips[0], port=port, is_https=is_https, path=path)


def _private_refusal(hostname: str, ip: str, port: int, allowance: str) -> AddressRefused:
    entry = hostports.spell(hostname.strip("[]"), port)
    hint = (f"To allow it, the operator adds {entry} to {allowance} (comma-separated; an entry with a port "
            "opens that port only) in the platform's environment and restarts it.")
    if allowance in _NAMELESS:
        return AddressRefused(
            f"{entry} resolves to a private or local address ({ip}), which this deployment does not let "
            f"{_FAMILY_WORDS[allowance]} reach. An administrator of the deployment can allow it.", hint=hint)
    return AddressRefused(
        f"{hostname} resolves to a private or local address ({ip}). Only hosts the operator lists "
        f"in {allowance} may be reached on internal addresses.", hint=hint)


def check_url_blocking(url: str, *, allowance: str = TOOL_HOSTS) -> Pinned:
    """`check_url` for synchronous code (services validating at save, run assembly), also when the calling
    thread already runs an event loop (then the check runs on a thread of its own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(check_url(url, allowance=allowance))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, check_url(url, allowance=allowance)).result()


def _redirect_target(current: str, location: str) -> str:
    """The absolute URL a redirect names, refused (not a ValueError, which callers do not expect) when it is
    not http(s) — `file:`, `gopher:`, `ftp:` — or not a URL at all."""
    target = _ssrf.resolve_redirect_url(current, location)
    try:
        _ssrf.extract_host_and_port(target)
    except ValueError:
        scheme = urlparse(target).scheme or "?"
        raise AddressRefused(f"A redirect to a {scheme[:20]}: address was refused; only http(s) is followed.") from None
    return target


def operator_text(exc: BaseException) -> str:
    """The refusal with the operator's instruction (for logs, the command line and `sees_deployment_settings`)."""
    return exc.for_operator() if isinstance(exc, AddressRefused) else str(exc)


def check_domain(hostname: str, allowed: list[str] | None, blocked: list[str] | None) -> None:
    key = domain_key(hostname)
    if allowed is not None and key not in {domain_key(d) for d in allowed}:
        raise DomainRefused(f"{hostname} is not among the domains this agent may read.")
    if blocked and key in {domain_key(d) for d in blocked}:
        raise DomainRefused(f"{hostname} is blocked for this agent.")


def _with_params(url: str, params: dict[str, Any] | None) -> str:
    if not params:
        return url
    parsed = urlparse(url)
    extra = urlencode([(k, v) for k, v in params.items() if v is not None], doseq=True)
    query = f"{parsed.query}&{extra}" if parsed.query else extra
    return urlunparse(parsed._replace(query=query))


async def safe_request(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
    content: bytes | None = None,
    timeout: float = 30,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_redirects: int = MAX_REDIRECTS,
    allowed_domains: list[str] | None = None,
    blocked_domains: list[str] | None = None,
    sensitive_headers: frozenset[str] = frozenset(),
) -> Fetched:
    """Send one request with every hop checked and pinned. Non-2xx responses are returned, not raised.

    Raises `Refused` (address, domain, size), `httpx2.TimeoutException` and `httpx2.RequestError`.
    `sensitive_headers` (lowercase names) are dropped, with Authorization/Cookie, when a redirect leaves
    the origin. A credential carried in `params` is never forwarded to a redirect target (the target's
    URL is the server's, not ours).
    """
    current = _with_params(url, params)
    method = method.upper()
    body = content
    send_headers = dict(headers or {})
    drop = {"authorization", "cookie", "proxy-authorization"} | set(sensitive_headers)
    hops: list[str] = []
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(timeout, connect=min(timeout, 5)),
                                  follow_redirects=False, trust_env=False) as client:
        for _ in range(max_redirects + 1):
            pinned = await check_url(current)
            check_domain(pinned.hostname, allowed_domains, blocked_domains)
            hops.append(current)
            resolved = _ssrf.ResolvedUrl(pinned.ip, pinned.hostname, pinned.port, pinned.is_https, pinned.path)
            request_url = _ssrf.build_url_with_ip(resolved)
            request_headers = {k: v for k, v in send_headers.items() if k.lower() != "host"}
            default_port = 443 if pinned.is_https else 80
            request_headers["Host"] = pinned.hostname if pinned.port == default_port else f"{pinned.hostname}:{pinned.port}"
            request_headers.setdefault("Accept-Encoding", _ssrf._BOUNDED_ACCEPT_ENCODING)
            extensions = {"sni_hostname": pinned.hostname} if pinned.is_https else {}
            request = client.build_request(
                method, request_url, headers=request_headers, content=body, extensions=extensions
            )
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect:
                    location = response.headers.get("location")
                    if not location:
                        raise Refused("A redirect arrived without a Location header.")
                    previous = current
                    current = _redirect_target(current, location)
                    if response.status_code not in _BODY_KEEPING_REDIRECTS:
                        method, body = ("GET" if method != "HEAD" else "HEAD"), None
                        send_headers = {k: v for k, v in send_headers.items() if k.lower() != "content-type"}
                    if not _ssrf._keeps_credentials(previous, current):
                        send_headers = {k: v for k, v in send_headers.items() if k.lower() not in drop}
                    continue
                try:
                    content = await _ssrf._read_capped_body(response, max_bytes)
                except ValueError as exc:
                    raise TooLarge(str(exc)) from None
                # The final URL as the caller sees it: the first hop is the URL it asked for.
                return Fetched(status=response.status_code, headers=response.headers, content=content,
                               url=url if len(hops) == 1 else current, hops=hops)
            finally:
                await response.aclose()
    raise Refused(f"Too many redirects (more than {max_redirects}).")


# Headers that carry a credential in the HTTP APIs we talk to (OpenAI/OpenRouter: Authorization; Anthropic:
# x-api-key; Azure-style gateways: api-key). httpx strips only Authorization on a cross-origin redirect.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})


@functools.lru_cache(maxsize=1)
def shared_tls_context() -> Any:
    """One verifying TLS context per process for every pinned client: building one loads the CA bundle, which
    was most of a run's CPU when each run's model client made its own (bench/concurrency.py). An SSLContext
    is safe to share between threads and event loops; the pinned address never changes what it verifies,
    because the TLS server name stays the URL's host."""
    return httpx2.create_ssl_context(trust_env=False)


class PinnedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that applies `check_url` to every request it sends (each redirect hop, each
    SSE message POST) and connects to the address it checked, keeping the original `Host` header and TLS
    server name, so a DNS answer that changes after the check is never used.

    `allowance` names the operator's list of reachable private hosts. With `home` (the base URL a client was
    configured with), a request that leaves that origin (a redirect elsewhere) is sent without any
    `CREDENTIAL_HEADERS`, whichever header the SDK put its key in."""

    def __init__(self, *, allowance: str = TOOL_HOSTS, home: str | None = None,
                 limits: httpx2.Limits | None = None) -> None:
        # `limits`: the pool's (httpx's default is 100 connections; a model client shared by a worker's runs
        # needs room for every stream it holds, agents.runner.assembly.build_model).
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False, verify=shared_tls_context(),
                                                limits=limits if limits is not None else httpx2.Limits(
                                                    max_connections=100, max_keepalive_connections=20))
        self._allowance = allowance
        self._home = home

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        _pin(request, await check_url(str(request.url), allowance=self._allowance), self._home)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class PinnedSyncTransport(httpx2.BaseTransport):
    """`PinnedTransport` for synchronous clients (the channel adapters' platform calls run in worker threads)."""

    def __init__(self, *, allowance: str = TOOL_HOSTS, home: str | None = None, verify: Any = True) -> None:
        self._inner = httpx2.HTTPTransport(trust_env=False, verify=verify)
        self._allowance = allowance
        self._home = home

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        _pin(request, check_url_blocking(str(request.url), allowance=self._allowance), self._home)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def _pin(request: httpx2.Request, pinned: Pinned, home: str | None) -> None:
    """Send `request` to the checked address; off `home`'s origin, without any credential header."""
    if home is not None and not _ssrf._keeps_credentials(home, str(request.url)):
        for name in CREDENTIAL_HEADERS:
            request.headers.pop(name, None)
    # The client set `Host` from the URL when it built the request; only the connect address changes.
    request.url = request.url.copy_with(host=pinned.ip.split("%")[0])
    if pinned.is_https:
        request.extensions = {**request.extensions, "sni_hostname": pinned.hostname}


def pinned_sync_client(*, allowance: str, home: str | None = None, timeout: float = 15,
                       follow_redirects: bool = False) -> httpx2.Client:
    """A synchronous client whose every request (and redirect hop) goes through `PinnedSyncTransport`."""
    return httpx2.Client(transport=PinnedSyncTransport(allowance=allowance, home=home), timeout=timeout,
                         follow_redirects=follow_redirects, max_redirects=MAX_REDIRECTS, trust_env=False)


def pinned_client_factory(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    follow_redirects: bool = False,
) -> httpx2.AsyncClient:
    """The MCP SDK's `McpHttpClientFactory` shape (its defaults: 30 s, 300 s reads for event streams)."""
    return httpx2.AsyncClient(
        transport=PinnedTransport(),
        headers=headers,
        timeout=timeout or httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        follow_redirects=follow_redirects,
        max_redirects=MAX_REDIRECTS,
        trust_env=False,
    )


def refusal_in(exc: BaseException) -> Refused | None:
    """The `Refused` behind an error a protocol client wrapped (exception groups, causes), if any."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, Refused):
            return current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                stack.append(linked)
    return None
