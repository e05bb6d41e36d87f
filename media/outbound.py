"""The HTTP side shared by the media providers that have no pydantic-ai model class (speech, video).

- `base_url(provider, default)`: the operator's endpoint for a provider, `GENERATED_MEDIA_<PROVIDER>_BASE_URL`
  when set (tests point it at a local fake), else the catalog's public endpoint.
- `api_client(base)`: an httpx client sending through the outbound guard (`netguard.PinnedTransport`,
  `MODEL_ALLOWED_PRIVATE_HOSTS`), whose key header is dropped on any hop that leaves `base`'s origin.
- `download(url)`: a finished clip fetched from the provider's storage host with a client of its own that
  carries no key at all (a signed URL needs none), through the same guard, capped in size.
- `ProviderError`: what a provider answered, reduced to its status and error code. Its error text is never
  kept: it may quote the prompt or name the key's owner.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from agenticos import netguard

MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024


KEY_CODES = frozenset({"invalid_api_key", "API_KEY_INVALID", "unauthorized", "AuthenticationError"})


class ProviderError(Exception):
    """A provider's non-success answer: status and code only."""

    def __init__(self, status: int, code: str = "") -> None:
        self.status = status
        self.code = code[:80]
        super().__init__(f"HTTP {status}{f', code {self.code}' if self.code else ''}")

    @property
    def where(self) -> str:
        return str(self)

    @property
    def rejected_key(self) -> bool:
        """The key itself was refused (Google answers a bad key 400 with the reason API_KEY_INVALID)."""
        return self.status == 401 or self.code in KEY_CODES


class Timeout(Exception):  # noqa: N818 (an outcome, named as the provider's word for it)
    """The provider did not answer (or finish) in time."""


def base_url(provider: str, default: str) -> str:
    configured = getattr(settings, f"GENERATED_MEDIA_{provider.upper()}_BASE_URL", "") or ""
    return str(configured or default).rstrip("/")


def api_client(base: str, *, timeout: float) -> Any:
    import httpx2

    client = httpx2.AsyncClient(transport=netguard.PinnedTransport(allowance=netguard.MODEL_HOSTS, home=base),
                                timeout=timeout, follow_redirects=True, max_redirects=netguard.MAX_REDIRECTS)
    return client


def error_code(response: Any) -> str:
    """The provider's error code from its JSON envelope (OpenAI/xAI `error.code`, ElevenLabs `detail.status`,
    Google `error.status`, BytePlus `error.code`); never its message."""
    try:
        body = json.loads(response.content or b"null")
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    # Google puts the precise reason (API_KEY_INVALID) under error.details[].reason, its status is generic.
    details = (body.get("error") or {}).get("details") if isinstance(body.get("error"), dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and isinstance(detail.get("reason"), str) and detail["reason"]:
            return str(detail["reason"])
    for holder in (body.get("error"), body.get("detail"), body):
        if isinstance(holder, dict):
            for key in ("code", "status", "type"):
                value = holder.get(key)
                if isinstance(value, str) and value:
                    return value
    return ""


def raise_for(response: Any) -> None:
    if response.status_code >= 400:
        raise ProviderError(response.status_code, error_code(response))


async def download(url: str, *, timeout: float) -> bytes:
    """The bytes at a provider's (signed) storage URL: no key, the guard on every hop, at most
    MAX_DOWNLOAD_BYTES."""
    import httpx2

    async with httpx2.AsyncClient(transport=netguard.PinnedTransport(allowance=netguard.MODEL_HOSTS),
                                  timeout=timeout, follow_redirects=True,
                                  max_redirects=netguard.MAX_REDIRECTS) as client:
        async with client.stream("GET", url) as response:
            if response.status_code >= 400:
                await response.aread()
                raise_for(response)
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_DOWNLOAD_BYTES:
                    raise ProviderError(413, "clip_too_large")
                chunks.append(chunk)
    return b"".join(chunks)


def is_timeout(exc: BaseException) -> bool:
    chain = [exc, exc.__cause__, exc.__context__]
    return any(link is not None and ("timeout" in type(link).__name__.lower() or isinstance(link, Timeout))
               for link in chain)
