"""A small client for the mem0 REST API (cloud, or self-hosted at a base_url), and the clearing helper.

Why not the `mem0ai` SDK: it pulls a vector store, an LLM client and telemetry to offer a local mode we
never use; the three REST calls the capability needs (add, search, delete by user) are below.

Every call is scoped by `user_id = "{org}:{agent}:{owner}"`, so one mem0 account cannot mix the memories
of two organizations, two agents or two people. A self-hosted base_url must be https and its host listed
in `MEM0_ALLOWED_HOSTS` (empty list = self-hosting refused): the key travels in the Authorization header,
so someone who may bind a shared key without reading it must not be able to aim it at their own server.
Every request goes through the outbound guard's pinned transport (allowance `MEM0_ALLOWED_HOSTS`): the address
is resolved and checked on each call and the connection made to the checked address, so a listed name (or
mem0's cloud) that resolves to a metadata address, or unlisted to a private one, never receives the key.
"""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import urlsplit

import httpx2
from django.conf import settings

from agenticos import netguard

CLOUD_BASE_URL = "https://api.mem0.ai"
TIMEOUT = httpx2.Timeout(20.0, connect=5.0)


class Mem0Error(Exception):
    """mem0 refused or could not be reached. Safe to show (no key)."""


class Mem0NotAllowed(Mem0Error):
    """The base_url breaks the https + allow-list rule, or the outbound guard refused the server's address."""


def owner_scope(organization_id: str, agent_id: str, owner: str) -> str:
    return f"{organization_id}:{agent_id}:{owner}"


def check_base_url(base_url: str) -> str:
    """The URL to call, or Mem0NotAllowed. Empty = mem0's cloud."""
    if not base_url:
        return CLOUD_BASE_URL
    parts = urlsplit(base_url)
    allowed = [h.lower() for h in getattr(settings, "MEM0_ALLOWED_HOSTS", [])]
    if parts.scheme != "https":
        raise Mem0NotAllowed("A self-hosted mem0 base_url must use https.")
    if not allowed:
        raise Mem0NotAllowed("Self-hosted mem0 is not allowed on this deployment (MEM0_ALLOWED_HOSTS is empty).")
    if (parts.hostname or "").lower() not in allowed:
        raise Mem0NotAllowed(f"The mem0 host {parts.hostname!r} is not in MEM0_ALLOWED_HOSTS.")
    return base_url.rstrip("/")


class Mem0Client:
    def __init__(self, base_url: str, api_key: str):
        self.base_url = check_base_url(base_url)
        self._headers = {"Authorization": f"Token {api_key}"}
        ca_bundle = getattr(settings, "MEM0_CA_BUNDLE", "")
        # An extra CA to trust (a self-hosted mem0 behind a private CA); the system store otherwise.
        self._verify: Any = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else True

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        transport = netguard.PinnedSyncTransport(allowance=netguard.MEM0_HOSTS, home=self.base_url,
                                                 verify=self._verify)
        try:
            with httpx2.Client(transport=transport, timeout=TIMEOUT, follow_redirects=False,
                               trust_env=False) as client:
                response = client.request(method, f"{self.base_url}{path}", headers=self._headers, **kwargs)
        except netguard.Refused as exc:
            raise Mem0NotAllowed(f"The mem0 server's address was refused: {exc}") from None
        except httpx2.HTTPError as exc:
            raise Mem0Error(f"mem0 could not be reached ({type(exc).__name__}).") from exc
        if response.status_code in (401, 403):
            raise Mem0Error("mem0 refused the API key.")
        if response.status_code >= 400:
            raise Mem0Error(f"mem0 answered HTTP {response.status_code}.")
        return response.json() if response.content else None

    def add(self, user_id: str, text: str) -> Any:
        return self._request("POST", "/v1/memories/", json={
            "messages": [{"role": "user", "content": text}], "user_id": user_id, "infer": False,
        })

    def search(self, user_id: str, query: str, limit: int = 5) -> list[dict[str, Any]]:
        body = self._request("POST", "/v1/memories/search/", json={"query": query, "user_id": user_id,
                                                                     "limit": limit})
        rows = body.get("results", body) if isinstance(body, dict) else body
        return list(rows or [])

    def delete_all(self, user_id: str) -> None:
        self._request("DELETE", "/v1/memories/", params={"user_id": user_id})

    def user_ids(self, prefix: str) -> list[str]:
        """Every mem0 user whose id starts with `prefix` (`GET /v1/entities/`). Raises Mem0Error when the answer
        is not the whole list (a page with more behind it, a count larger than what came): clearing from a
        partial list would report done while memories remain."""
        body = self._request("GET", "/v1/entities/")
        rows: Any = body
        if isinstance(body, dict):
            rows = body.get("results")
            if body.get("next") or (isinstance(body.get("count"), int) and isinstance(rows, list)
                                    and body["count"] > len(rows)):
                raise Mem0Error("mem0 listed only part of its users, so the clearing cannot be complete.")
        if not isinstance(rows, list):
            raise Mem0Error("mem0 answered its user list in a form this deployment does not read.")
        names = {str(row.get("name") or "") for row in rows
                 if isinstance(row, dict) and row.get("type", "user") == "user"}
        return sorted(name for name in names if name.startswith(prefix))


# ------------------------------------------------------------------ clearing a person everywhere


def endpoints_for_agent(agent: Any) -> set[tuple[str, str | None]]:
    """(base_url, secret_id) of every mem0 binding in the agent's draft and all its kept versions."""
    found: set[tuple[str, str | None]] = set()
    specs = [agent.draft_spec or {}] + [v.spec for v in agent.versions.all()]
    for spec in specs:
        for binding in spec.get("capabilities") or []:
            if binding.get("id") == "memory_mem0":
                found.add((str((binding.get("config") or {}).get("base_url") or ""), binding.get("secret_id")))
    return found


def clear_owner_everywhere(organization: Any, *, owner: str) -> int:
    """Delete `owner`'s mem0 memories for every agent of the organization that binds mem0 (now or in any
    kept version). Raises Mem0Error when a key is missing or a provider fails: the caller must not report
    the clearing as complete."""
    from agenticos import vault
    from agenticos.models import Secret
    from agents.models import Agent

    cleared = 0
    for agent in Agent.objects.filter(organization=organization).prefetch_related("versions"):
        for base_url, secret_id in sorted(endpoints_for_agent(agent), key=lambda e: (e[0], e[1] or "")):
            secret = Secret.objects.filter(organization=organization, pk=secret_id).first() if secret_id else None
            if secret is None:
                raise Mem0Error(
                    f"Agent {agent.name!r} binds mem0 without a usable key; restore the key and clear again.")
            client = Mem0Client(base_url, vault.reveal(secret))
            client.delete_all(owner_scope(str(organization.pk), str(agent.pk), owner))
            cleared += 1
    return cleared


def clear_agent_everywhere(agent: Any) -> int:
    """Delete the mem0 memories of every owner (person or group chat) of `agent`, at every mem0 endpoint its
    draft or any kept version binds. Returns how many owner spaces were cleared. Raises Mem0Error when a key
    is missing, a provider fails or its list of users is incomplete: the caller must not report it done."""
    from agenticos import vault
    from agenticos.models import Secret

    organization_id = str(agent.organization_id)
    prefix = owner_scope(organization_id, str(agent.pk), "")
    cleared = 0
    for base_url, secret_id in sorted(endpoints_for_agent(agent), key=lambda e: (e[0], e[1] or "")):
        secret = Secret.objects.filter(organization_id=organization_id, pk=secret_id).first() if secret_id else None
        if secret is None:
            raise Mem0Error(f"Agent {agent.name!r} binds mem0 without a usable key; restore the key and clear again.")
        client = Mem0Client(base_url, vault.reveal(secret))
        for user_id in client.user_ids(prefix):
            client.delete_all(user_id)
            cleared += 1
    return cleared
