"""A local OpenID Connect provider (stdlib ThreadingHTTPServer in a thread) speaking the real protocol: discovery,
an authorization endpoint with a sign-in page, the authorization-code grant with client authentication (basic or
post) and PKCE S256, RS256 ID tokens signed with a real RSA key (PyJWT + cryptography), JWKS and userinfo.

A test sets who signs in next (`provider.person = {...claims}`) and, to attack, how the next token is bent:
`provider.bend = {"iss": ..., "aud": ..., "expired": True, "nonce": ..., "foreign_key": True}`.
Every request is recorded in `provider.requests` (method, path).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.ports import listening_socket


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    nonce: str | None
    code_challenge: str | None
    claims: dict[str, Any]


@dataclass
class OidcProvider:
    client_id: str = "agenticos-test-client"
    client_secret: str = "idp-client-secret-5f2a9c"  # noqa: S105 (a test credential)
    person: dict[str, Any] = field(default_factory=lambda: {"sub": "ada-1", "email": "ada@acme.com",
                                                            "email_verified": True, "name": "Ada Lovelace"})
    bend: dict[str, Any] = field(default_factory=dict)
    auto_approve: bool = True
    requests: list[tuple[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.key = _rsa_key()
        self.foreign_key = _rsa_key()
        self.kid = "test-key-1"
        self.codes: dict[str, Grant] = {}
        self.access_tokens: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> OidcProvider:
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

    # ------------------------------------------------------------------ protocol
    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def id_token(self, grant: Grant) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.client_id, "iat": now, "exp": now + 300,
                  "jti": secrets.token_hex(8), **grant.claims}
        if grant.nonce is not None:
            claims["nonce"] = grant.nonce
        bend = self.bend
        if "iss" in bend:
            claims["iss"] = bend["iss"]
        if "aud" in bend:
            claims["aud"] = bend["aud"]
        if "nonce" in bend:
            claims["nonce"] = bend["nonce"]
        if bend.get("expired"):
            claims["iat"], claims["exp"] = now - 3600, now - 1800
        key = self.foreign_key if bend.get("foreign_key") else self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})

    def approve(self, query: dict[str, str]) -> str:
        """The redirect back to the client with a fresh code for `self.person`."""
        code = secrets.token_urlsafe(16)
        with self.lock:
            self.codes[code] = Grant(query["client_id"], query["redirect_uri"], query.get("nonce"),
                                     query.get("code_challenge"), dict(self.person))
        return f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query.get('state', '')})}"

    def exchange(self, form: dict[str, list[str]], authorization: str | None) -> tuple[int, dict[str, Any]]:
        value = {k: v[0] for k, v in form.items()}
        client_id, client_secret = value.get("client_id"), value.get("client_secret")
        if authorization and authorization.startswith("Basic "):
            client_id, _, client_secret = base64.b64decode(authorization[6:]).decode().partition(":")
        if client_id != self.client_id or client_secret != self.client_secret:
            return 401, {"error": "invalid_client"}
        with self.lock:
            grant = self.codes.pop(value.get("code", ""), None)  # a code works once
        if grant is None or value.get("grant_type") != "authorization_code" or \
                grant.redirect_uri != value.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        if grant.code_challenge is not None:
            verifier = value.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if digest != grant.code_challenge:
                return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        access = secrets.token_urlsafe(16)
        with self.lock:
            self.access_tokens[access] = grant.claims
        return 200, {"access_token": access, "token_type": "Bearer", "expires_in": 300,
                     "id_token": self.id_token(grant)}


def _handler(provider: OidcProvider):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet
            return

        def _send(self, status: int, payload: Any = None, *, ctype: str = "application/json",
                  raw: bytes | None = None, headers: dict[str, str] | None = None) -> None:
            data = raw if raw is not None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _query(self) -> dict[str, str]:
            return {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}

        def do_GET(self) -> None:
            path = urlparse(self.path).path
            provider.requests.append(("GET", path))
            if path == "/.well-known/openid-configuration":
                return self._send(200, provider.discovery())
            if path == "/jwks":
                return self._send(200, provider.jwks())
            if path == "/userinfo":
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                claims = provider.access_tokens.get(token)
                return self._send(200, claims) if claims else self._send(401, {"error": "invalid_token"})
            if path == "/authorize":
                query = self._query()
                if query.get("client_id") != provider.client_id or query.get("response_type") != "code":
                    return self._send(400, {"error": "invalid_request"})
                if provider.auto_approve:
                    return self._send(302, raw=b"", headers={"Location": provider.approve(query)})
                return self._sign_in_page(query)
            return self._send(404, {"error": "not_found"})

        def _sign_in_page(self, query: dict[str, str]) -> None:
            hidden = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                             for k, v in query.items())
            page = (f"<!doctype html><title>Test IdP</title><h1>Test identity provider</h1>"
                    f"<form method=post action=/authorize>{hidden}"
                    f"<button>Continue as {html.escape(str(provider.person.get('email')))}</button></form>")
            self._send(200, raw=page.encode(), ctype="text/html; charset=utf-8")

        def do_POST(self) -> None:
            path = urlparse(self.path).path
            provider.requests.append(("POST", path))
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode())
            if path == "/token":
                provider.token_requests.append(form)
                status, payload = provider.exchange(form, self.headers.get("Authorization"))
                return self._send(status, payload)
            if path == "/authorize":
                query = {k: v[0] for k, v in form.items()}
                return self._send(302, raw=b"", headers={"Location": provider.approve(query)})
            return self._send(404, {"error": "not_found"})

    return Handler
