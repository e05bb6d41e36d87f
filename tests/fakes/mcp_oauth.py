"""A local OAuth 2.1 authorization server for MCP (stdlib ThreadingHTTPServer in a thread), speaking what the MCP
authorization spec asks of one: RFC 8414 metadata, RFC 7591 dynamic client registration, the authorization-code
grant with PKCE S256 only (a request without a challenge is refused), the refresh-token grant with rotation,
RFC 7009 revocation, and RFC 9207 `iss` on the redirect back. `FakeMCPServer(authorization_server=...)` is the
protected resource that accepts its access tokens.

The person "signs in" by loading /authorize: it redirects straight back with a code (a consent screen that
always consents), so a test follows the redirect like a browser. `expire_access_tokens()` makes every access
token issued so far stop working (what the passing of `expires_in` does at a real server), without a sleep.
Every request is recorded in `requests` (method, path); token requests' grant types in `grants`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from tests.fakes.ports import listening_socket


@dataclass
class _Code:
    client_id: str
    redirect_uri: str
    challenge: str
    resource: str | None
    scope: str | None


@dataclass
class FakeAuthorizationServer:
    expires_in: int = 3600
    scopes: tuple[str, ...] = ("read", "write")
    requests: list[tuple[str, str]] = field(default_factory=list)
    grants: list[str] = field(default_factory=list)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    resources: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, _Code] = {}
        self.access: dict[str, str] = {}  # token -> client_id, while valid
        self.refresh: dict[str, str] = {}
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> FakeAuthorizationServer:
        sock = listening_socket()
        self.port = sock.getsockname()[1]
        self.issuer = f"http://127.0.0.1:{self.port}"
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self), bind_and_activate=False)
        server.socket.close()
        server.socket = sock
        server.daemon_threads = True
        self.server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # ---------------------------------------------------------------- what the resource server asks
    def token_valid(self, token: str) -> bool:
        with self.lock:
            return token in self.access

    def expire_access_tokens(self) -> None:
        with self.lock:
            self.access.clear()

    @property
    def live_refresh_tokens(self) -> int:
        return len(self.refresh)

    # ---------------------------------------------------------------- protocol
    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "revocation_endpoint": f"{self.issuer}/revoke",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
            "scopes_supported": list(self.scopes),
            "authorization_response_iss_parameter_supported": True,
        }

    def register(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not body.get("redirect_uris"):
            return 400, {"error": "invalid_redirect_uri"}
        client_id = "client-" + secrets.token_hex(6)
        method = body.get("token_endpoint_auth_method") or "client_secret_post"
        record = {**body, "client_id": client_id, "token_endpoint_auth_method": method}
        if method != "none":
            record["client_secret"] = "fake-client-secret-" + secrets.token_hex(8)
        with self.lock:
            self.clients[client_id] = record
            self.registrations.append(body)
        return 201, record

    def authorize(self, query: dict[str, str]) -> tuple[int, str]:
        client = self.clients.get(query.get("client_id", ""))
        if client is None or query.get("redirect_uri") not in client["redirect_uris"]:
            return 400, ""  # never redirect to an address the client did not register
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256" or \
                not query.get("code_challenge"):
            return 400, ""
        code = secrets.token_urlsafe(16)
        with self.lock:
            self.codes[code] = _Code(client["client_id"], query["redirect_uri"], query["code_challenge"],
                                     query.get("resource"), query.get("scope"))
            self.resources.append(query.get("resource"))
        back = {"code": code, "state": query.get("state", ""), "iss": self.issuer}
        return 302, f"{query['redirect_uri']}?{urlencode(back)}"

    def _client_of(self, form: dict[str, str], authorization: str | None) -> dict[str, Any] | None:
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.startswith("Basic "):
            client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
        client = self.clients.get(client_id or "")
        if client is None:
            return None
        if client["token_endpoint_auth_method"] != "none" and secret != client.get("client_secret"):
            return None
        return client

    def _issue(self, client_id: str, scope: str | None) -> dict[str, Any]:
        access, refresh = "at-" + secrets.token_urlsafe(16), "rt-" + secrets.token_urlsafe(16)
        self.access[access] = client_id
        self.refresh[refresh] = client_id
        return {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in,
                "refresh_token": refresh, "scope": scope or " ".join(self.scopes)}

    def token(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        grant = form.get("grant_type", "")
        self.grants.append(grant)
        with self.lock:
            client = self._client_of(form, authorization)
            if client is None:
                return 401, {"error": "invalid_client"}
            if grant == "authorization_code":
                code = self.codes.pop(form.get("code", ""), None)  # a code works once
                if code is None or code.client_id != client["client_id"] or \
                        code.redirect_uri != form.get("redirect_uri"):
                    return 400, {"error": "invalid_grant"}
                verifier = form.get("code_verifier", "")
                digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                if digest != code.challenge:
                    return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
                return 200, self._issue(client["client_id"], code.scope)
            if grant == "refresh_token":
                owner = self.refresh.pop(form.get("refresh_token", ""), None)  # rotated: each works once
                if owner != client["client_id"]:
                    return 400, {"error": "invalid_grant"}
                return 200, self._issue(client["client_id"], None)
        return 400, {"error": "unsupported_grant_type"}

    def revoke(self, form: dict[str, str], authorization: str | None) -> int:
        with self.lock:
            if self._client_of(form, authorization) is None:
                return 401
            token = form.get("token", "")
            self.access.pop(token, None)
            self.refresh.pop(token, None)
        return 200


def _handler(server: FakeAuthorizationServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet
            return

        def _send(self, status: int, payload: Any = None, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode() if payload is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _form(self) -> dict[str, str]:
            length = int(self.headers.get("Content-Length") or 0)
            return {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}

        def do_GET(self) -> None:
            parsed = urlparse(self.path)
            server.requests.append(("GET", parsed.path))
            if parsed.path == "/.well-known/oauth-authorization-server":
                return self._send(200, server.metadata())
            if parsed.path == "/authorize":
                status, location = server.authorize({k: v[0] for k, v in parse_qs(parsed.query).items()})
                if status == 302:
                    return self._send(302, headers={"Location": location})
                return self._send(400, {"error": "invalid_request"})
            return self._send(404, {"error": "not_found"})

        def do_POST(self) -> None:
            path = urlparse(self.path).path
            server.requests.append(("POST", path))
            auth = self.headers.get("Authorization")
            if path == "/register":
                length = int(self.headers.get("Content-Length") or 0)
                status, body = server.register(json.loads(self.rfile.read(length) or b"{}"))
                return self._send(status, body)
            if path == "/token":
                status, body = server.token(self._form(), auth)
                return self._send(status, body)
            if path == "/revoke":
                return self._send(server.revoke(self._form(), auth))
            return self._send(404, {"error": "not_found"})

    return Handler
