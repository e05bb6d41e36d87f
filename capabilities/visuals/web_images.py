"""A drawing's image from an https:// address ({{image:NAME}}): only for an agent that already reads the web — web_fetch
or browser_use bound and on — and only on a host one of them would read. Their own rules decide: web_fetch's
allowed_domains / blocked_domains (netguard.check_domain) and the browser's allowed_domains patterns
(browser.policy.host_matches). The download then goes through netguard's pinned transport (every address checked
and pinned: a metadata address always refused, a private one unless the operator lists the host in
TOOL_ALLOWED_PRIVATE_HOSTS), may be redirected only on the same host, is read raw and cut at 2 MiB, and is kept only
when its bytes are a PNG, JPEG, GIF or WebP image. A reader whose tool needs a person's approval does not count: a
drawing would fetch without asking. Every refusal is a sentence the model can act on.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2
from pydantic import ValidationError

from agenticos import netguard

TIMEOUT = 15
# The web readers and the tool whose approval gates them.
READERS = {"web_fetch": "web_fetch", "browser_use": "browse_web"}
MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"),
         (b"GIF89a", "image/gif"))


@dataclass(frozen=True)
class Reader:
    capability_id: str
    allowed: list[str] | None
    blocked: list[str] | None = None


@dataclass(frozen=True)
class WebReaders:
    readers: tuple[Reader, ...] = ()
    gated: tuple[str, ...] = ()  # bound readers whose tool waits for a person's approval


def readers_of(spec: Any) -> WebReaders:
    """The agent's web readers as its spec binds them (enabled, with a valid config)."""
    from capabilities import registry

    found: list[Reader] = []
    gated: list[str] = []
    granted = registry.granted_scopes()
    for binding in spec.enabled_bindings() if spec is not None else []:
        tool = READERS.get(binding.id)
        cap = registry.find(binding.id) if tool else None
        if cap is None or not set(cap.scopes) <= granted:
            continue  # a reader this deployment does not let run reads nothing
        try:
            config = registry.validate_config(cap, binding)
        except ValidationError:
            continue
        if binding.tool_approval.get(tool, binding.approval) == "required":
            gated.append(binding.id)
            continue
        found.append(Reader(binding.id, getattr(config, "allowed_domains", None),
                            getattr(config, "blocked_domains", None)))
    return WebReaders(tuple(found), tuple(gated))


def _host_refusal(host: str, web: WebReaders) -> str:
    """"" when a reader would read `host`, else why none would."""
    from capabilities.browser import policy

    reasons = []
    for reader in web.readers:
        if reader.capability_id == "web_fetch":
            try:
                netguard.check_domain(host, reader.allowed, reader.blocked)
                return ""
            except netguard.DomainRefused as exc:
                reasons.append(f"web_fetch: {exc}")
        elif reader.allowed is None or policy.host_matches(host, reader.allowed):
            return ""
        else:
            reasons.append(f"browser_use: {host} is not in its allowed_domains.")
    return " ".join(reasons)


def _sniffed(data: bytes) -> str:
    for magic, mime in MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return ""


async def load(name: str, url: str, web: WebReaders, max_bytes: int) -> tuple[str, str]:
    """(data URI, "") for the image at `url`, or ("", a refusal naming what to change)."""
    label = f"image {name!r}"
    if not web.readers:
        if web.gated:
            return "", (f"{label} is a web address, and {' and '.join(web.gated)} here waits for a person's approval "
                        "on every read, so a drawing does not fetch on its own: attach the image to the conversation "
                        "or save it in the workspace")
        return "", (f"{label} is a web address, and this agent does not read the web (neither web_fetch nor "
                    "browser_use is on), so it does not fetch drawing images from the web: attach the image to the "
                    "conversation or save it in the workspace")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "", f"{label}: {url[:200]!r} is not a usable address"
    if parts.scheme.lower() != "https" or not host:
        return "", f"{label}: only https:// addresses are fetched for a drawing, not {url[:200]!r}"
    if parts.username or parts.password:
        return "", f"{label}: an address with a user name or password in it is not fetched"
    refused = _host_refusal(host, web)
    if refused:
        return "", f"{label}: none of this agent's web readers would read {host}. {refused}"
    try:
        data = await _download(url, host, max_bytes)
    except netguard.Refused as exc:
        return "", f"{label}: {exc}"
    except httpx2.TimeoutException:
        return "", f"{label}: {host} did not answer within {TIMEOUT} seconds"
    except (httpx2.RequestError, httpx2.InvalidURL) as exc:
        found = netguard.refusal_in(exc)
        return "", f"{label}: {found}" if found else f"{label}: {host} could not be reached ({type(exc).__name__})"
    mime = _sniffed(data)
    if not mime:
        return "", f"{label}: what {host} sent is not a PNG, JPEG, GIF or WebP image"
    return f"data:{mime};base64,{base64.b64encode(data).decode()}", ""


async def _download(url: str, host: str, max_bytes: int) -> bytes:
    """The body at `url`, following redirects on the same host only. Raises netguard.Refused and httpx errors."""
    current = url
    key = netguard.domain_key(host)
    async with httpx2.AsyncClient(transport=netguard.PinnedTransport(), follow_redirects=False, trust_env=False,
                                  timeout=httpx2.Timeout(TIMEOUT, connect=5)) as client:
        for _ in range(netguard.MAX_REDIRECTS + 1):
            # Raw bytes only: a compressed body could not be cut before it is inflated.
            request = client.build_request("GET", current, headers={"Accept": "image/*",
                                                                     "Accept-Encoding": "identity"})
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect:
                    target = urljoin(current, response.headers.get("location") or "")
                    moved = urlsplit(target)
                    if moved.scheme.lower() != "https" or netguard.domain_key(moved.hostname or "") != key:
                        raise netguard.DomainRefused(f"{host} redirected the image to another host "
                                                     f"({moved.hostname or target[:100]}), which is not followed")
                    current = target
                    continue
                if not 200 <= response.status_code < 300:
                    raise netguard.Refused(f"{host} answered HTTP {response.status_code}")
                if response.headers.get("content-encoding", "identity").lower() not in ("", "identity"):
                    raise netguard.Refused(f"{host} sent the image compressed, which is not read")
                data = bytearray()
                async for chunk in response.aiter_raw():
                    data += chunk
                    if len(data) > max_bytes:
                        raise netguard.TooLarge(f"the image at {host} is larger than {max_bytes:,} bytes, the most "
                                                "an image can be")
                return bytes(data)
            finally:
                await response.aclose()
    raise netguard.Refused(f"{host} redirected the image more than {netguard.MAX_REDIRECTS} times")
