"""The MCP authorization flow for catalog connections, on the `mcp` package's client
(`mcp.client.auth.OAuthClientProvider`): protected-resource and authorization-server metadata discovery,
dynamic client registration, authorization code with PKCE (S256), the token exchange, and refresh when the
access token has expired. Every request the flow sends goes through `netguard.PinnedTransport`.

The library runs the flow in one process that waits for the person (a local callback server). A console's
callback arrives in another request, maybe another process, so the flow is split in two:

1. `begin` drives the library's own flow with a first MCP request until it needs the person: discovery and
   registration are the library's; `ConsoleOAuthProvider._perform_authorization_code_grant` stops there with
   the authorization URL, the PKCE verifier and the state (`AuthorizationNeeded`).
2. `complete` (the callback) checks the authorization response's `iss` and exchanges the code with the
   library's token request and token handling, on the client it registered and the metadata it discovered.

A run then uses the same provider class as its MCP client's `auth`: the library adds the bearer token and
refreshes it when it has expired; `VaultTokenStorage` seals what it is given again.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx2
from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import PKCEParameters
from mcp.client.auth.utils import validate_authorization_response_iss
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp_types import LATEST_PROTOCOL_VERSION

from agenticos import netguard, vault
from capabilities.mcp.catalog import CatalogEntry
from capabilities.models import McpConnection, McpCredential

FLOW_TIMEOUT = 20.0
# Seconds before the stated expiry at which a token counts as expired: a request sent just before the edge
# would otherwise arrive with a dead token.
EXPIRY_MARGIN = 60


class AuthorizationNeeded(Exception):  # noqa: N818 (a signal that stops the flow, not an error)
    """The flow needs the person: send them to `url`; keep `state` and `verifier` for the callback."""

    def __init__(self, url: str, state: str, verifier: str) -> None:
        super().__init__("the person must sign in at the authorization server")
        self.url, self.state, self.verifier = url, state, verifier


class NotConnected(Exception):  # noqa: N818
    """No usable credential: the person (or the organization) has to connect the service again."""


def _not_our_stop(record: logging.LogRecord) -> bool:
    """The library logs every exception that leaves its flow at ERROR; ours that hands the person to the
    provider is the flow working, not failing."""
    return not (record.exc_info and isinstance(record.exc_info[1], AuthorizationNeeded))


logging.getLogger("mcp.client.auth.oauth2").addFilter(_not_our_stop)


@dataclass
class Sealed:
    client: dict[str, Any] | None
    tokens: dict[str, Any] | None


def _open(row: McpCredential) -> Sealed:
    data = json.loads(vault.reveal(row))  # a use of the person's tokens is a `secret.used` audit event
    return Sealed(client=data.get("client"), tokens=data.get("tokens"))


def _seal_into(row: McpCredential, value: Sealed) -> None:
    sealed = vault.seal(row.organization_id, json.dumps({"client": value.client, "tokens": value.tokens}))
    row.key_version, row.wrapped_key, row.ciphertext = sealed.key_version, sealed.wrapped_key, sealed.ciphertext


class VaultTokenStorage:
    """The library's `TokenStorage` over one McpCredential row: client registration and tokens sealed together.

    The row is created when the library registers a client (the person has not finished yet: `connected_at`
    stays null) and written again with each token the library is given (the exchange, every refresh)."""

    def __init__(self, *, connection: McpConnection, user_id: int | None, row: McpCredential | None = None) -> None:
        self.connection = connection
        self.user_id = user_id
        self.row = row
        self.value = _open(row) if row is not None else Sealed(client=None, tokens=None)

    async def get_tokens(self) -> OAuthToken | None:
        return OAuthToken.model_validate(self.value.tokens) if self.value.tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.value.tokens = tokens.model_dump(mode="json")
        expires_at = timezone.now() + timedelta(seconds=tokens.expires_in) if tokens.expires_in else None
        await sync_to_async(self._save)(expires_at=expires_at, tokens=True)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return OAuthClientInformationFull.model_validate(self.value.client) if self.value.client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.value.client = client_info.model_dump(mode="json", exclude_none=True)
        await sync_to_async(self._save)(expires_at=None, tokens=False)

    def _save(self, *, expires_at: Any, tokens: bool) -> None:
        now = timezone.now()
        with transaction.atomic():
            if self.row is None:
                self.row = McpCredential(organization_id=self.connection.organization_id,
                                         connection=self.connection, user_id=self.user_id)
            else:
                self.row = McpCredential.objects.select_for_update().get(pk=self.row.pk)
            _seal_into(self.row, self.value)
            if tokens:
                first = self.row.connected_at is None
                self.row.expires_at = expires_at
                self.row.connected_at = self.row.connected_at or now
                if not first:
                    self.row.refreshed_at = now
            self.row.save()


def client_metadata(entry: CatalogEntry, redirect_uri: str, scope: str | None = None) -> OAuthClientMetadata:
    return OAuthClientMetadata(redirect_uris=[redirect_uri], client_name="AgenticOS",  # type: ignore[list-item]
                               grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                               scope=scope or entry.scope or None, application_type="web")


class ConsoleOAuthProvider(OAuthClientProvider):
    """`OAuthClientProvider` whose interactive step ends the request instead of waiting in it."""

    def __init__(self, *args: Any, metadata: dict[str, Any] | None = None, expires_at: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._saved_metadata = metadata or {}
        self._expires_at = expires_at

    async def _initialize(self) -> None:
        # The library keeps the discovered metadata and the token's expiry in memory only; a run in another
        # process needs them to refresh at the right token endpoint, and at the right time.
        await super()._initialize()
        restore(self, self._saved_metadata)
        if self._expires_at is not None:
            self.context.token_expiry_time = self._expires_at.timestamp() - EXPIRY_MARGIN

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        # Hand-written because the library's version awaits the callback in the same coroutine (a local
        # callback server); here the person comes back in another HTTP request. The parameters are the
        # library's (PKCEParameters, the resource indicator and scope rules of OAuthContext).
        ctx = self.context
        if ctx.client_info is None or not ctx.client_metadata.redirect_uris:
            raise NotConnected("no registered client")
        if ctx.oauth_metadata and ctx.oauth_metadata.authorization_endpoint:
            endpoint = str(ctx.oauth_metadata.authorization_endpoint)
        else:
            endpoint = urljoin(ctx.get_authorization_base_url(ctx.server_url), "/authorize")
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        params = {"response_type": "code", "client_id": ctx.client_info.client_id,
                  "redirect_uri": str(ctx.client_metadata.redirect_uris[0]), "state": state,
                  "code_challenge": pkce.code_challenge, "code_challenge_method": "S256"}
        if ctx.should_include_resource_param(ctx.protocol_version):
            params["resource"] = ctx.get_resource_url()
        if ctx.client_metadata.scope:
            params["scope"] = ctx.client_metadata.scope
        raise AuthorizationNeeded(f"{endpoint}?{urlencode(params)}", state, pkce.code_verifier)


def snapshot(provider: OAuthClientProvider) -> dict[str, Any]:
    """What discovery found, kept on the credential (public documents: no secret is in them)."""
    ctx = provider.context
    return {
        "oauth_metadata": ctx.oauth_metadata.model_dump(mode="json", exclude_none=True) if ctx.oauth_metadata else None,
        "protected_resource": (ctx.protected_resource_metadata.model_dump(mode="json", exclude_none=True)
                               if ctx.protected_resource_metadata else None),
        "auth_server_url": ctx.auth_server_url,
        "protocol_version": ctx.protocol_version,
        "scope": ctx.client_metadata.scope,
    }


def restore(provider: OAuthClientProvider, saved: dict[str, Any]) -> None:
    ctx = provider.context
    if saved.get("oauth_metadata"):
        ctx.oauth_metadata = OAuthMetadata.model_validate(saved["oauth_metadata"])
    if saved.get("protected_resource"):
        ctx.protected_resource_metadata = ProtectedResourceMetadata.model_validate(saved["protected_resource"])
    ctx.auth_server_url = saved.get("auth_server_url") or ctx.auth_server_url
    ctx.protocol_version = saved.get("protocol_version") or ctx.protocol_version
    if saved.get("scope"):
        ctx.client_metadata.scope = saved["scope"]


def _pinned_client(auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=netguard.PinnedTransport(), auth=auth, timeout=FLOW_TIMEOUT,
                              trust_env=False)


def _initialize_request() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
                       "clientInfo": {"name": "agenticos", "version": "1"}}}


@dataclass
class Pending:
    url: str
    state: str
    verifier: str
    credential_id: str


async def begin(*, entry: CatalogEntry, connection: McpConnection, user_id: int | None, redirect_uri: str,
                existing: McpCredential | None) -> Pending:
    """Discover, register (unless a client is registered already) and return where to send the person.

    A preregistered entry's client (the operator's OAuth app) is given to the library as the stored client,
    so it skips registration. Raises `netguard.Refused`, the library's OAuth errors, or NotConnected when the
    server answers without asking for a sign-in (nothing to connect)."""
    storage = VaultTokenStorage(connection=connection, user_id=user_id, row=existing)
    storage.value.tokens = None  # a reconnect starts over: the old tokens are what failed
    preset = entry.preregistered_client()
    if preset is not None:
        storage.value.client = {"client_id": preset["client_id"], "client_secret": preset.get("client_secret"),
                                "redirect_uris": [redirect_uri],
                                "token_endpoint_auth_method": "client_secret_post" if preset.get("client_secret")
                                else "none"}
    elif storage.value.client and redirect_uri not in (storage.value.client.get("redirect_uris") or []):
        storage.value.client = None  # registered for another address of this console: register again
    provider = ConsoleOAuthProvider(server_url=entry.url, client_metadata=client_metadata(entry, redirect_uri),
                                    storage=storage)
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION}
    async with _pinned_client(provider) as client:
        try:
            await client.post(entry.url, json=_initialize_request(), headers=headers)
        except AuthorizationNeeded as needed:
            await sync_to_async(_keep_metadata)(storage, snapshot(provider))
            assert storage.row is not None
            return Pending(url=needed.url, state=needed.state, verifier=needed.verifier,
                           credential_id=str(storage.row.pk))
    raise NotConnected("the server answered without asking for a sign-in")


def _keep_metadata(storage: VaultTokenStorage, metadata: dict[str, Any]) -> None:
    if storage.row is None:  # a preregistered client: the library registered nothing, so nothing was saved
        storage._save(expires_at=None, tokens=False)
    assert storage.row is not None
    McpCredential.objects.filter(pk=storage.row.pk).update(metadata=metadata)
    storage.row.metadata = metadata


async def complete(*, entry: CatalogEntry, credential: McpCredential, redirect_uri: str, code: str,
                   verifier: str, iss: str | None) -> None:
    """Exchange the code (the library's token request and response handling); the tokens are sealed."""
    storage = VaultTokenStorage(connection=credential.connection, user_id=credential.user_id, row=credential)
    provider = ConsoleOAuthProvider(server_url=entry.url, client_metadata=client_metadata(entry, redirect_uri),
                                    storage=storage, metadata=credential.metadata)
    await provider._initialize()
    # RFC 9207: the response must come from the server the request went to (the library's check).
    validate_authorization_response_iss(iss, provider.context.oauth_metadata)
    request = await provider._exchange_token_authorization_code(code, verifier)
    async with _pinned_client() as client:
        response = await client.send(request)
        await provider._handle_token_response(response)


def runtime_auth(entry: CatalogEntry, credential: McpCredential) -> ConsoleOAuthProvider:
    """The `auth` of a run's MCP client: bearer token, refreshed when expired, sealed again when refreshed."""
    storage = VaultTokenStorage(connection=credential.connection, user_id=credential.user_id, row=credential)
    redirect = ((storage.value.client or {}).get("redirect_uris") or ["https://invalid/"])[0]
    return ConsoleOAuthProvider(server_url=entry.url, client_metadata=client_metadata(entry, redirect),
                                storage=storage, metadata=credential.metadata, expires_at=credential.expires_at)


async def revoke(credential: McpCredential) -> bool:
    """Tell the authorization server the tokens are no longer wanted (RFC 7009), when it has a revocation
    endpoint. Hand-written: the mcp client implements no revocation. Best effort: the credential is deleted
    whatever the server answers. Returns whether the server accepted."""
    endpoint = (credential.metadata.get("oauth_metadata") or {}).get("revocation_endpoint")
    if not endpoint:
        return False
    value = _open(credential)
    client = value.client or {}
    accepted = True
    async with _pinned_client() as http:
        for kind in ("refresh_token", "access_token"):
            token = (value.tokens or {}).get(kind)
            if not token:
                continue
            data = {"token": token, "token_type_hint": kind, "client_id": client.get("client_id", "")}
            auth: httpx2.Auth | None = None
            if client.get("client_secret") and client.get("token_endpoint_auth_method") == "client_secret_basic":
                auth = httpx2.BasicAuth(client["client_id"], client["client_secret"])
                data.pop("client_id")
            elif client.get("client_secret"):
                data["client_secret"] = client["client_secret"]
            try:
                response = await (http.post(endpoint, data=data, auth=auth) if auth is not None
                                  else http.post(endpoint, data=data))
            except (httpx2.HTTPError, netguard.Refused):
                accepted = False
                continue
            accepted = accepted and response.status_code == 200
    return accepted
