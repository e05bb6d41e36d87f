"""A local MCP server over streamable HTTP (the `mcp` package's MCPServer under uvicorn, in a thread).

Tools: add(a, b), echo(text), weather(city), plus `extra_tools` generated ones (tool_01 … tool_N) to make
a server big enough for tool search. When `token` is set, every request must carry
`Authorization: Bearer <token>`; requests are recorded (headers only) in `seen_auth`.

With `authorization_server` (tests.fakes.mcp_oauth.FakeAuthorizationServer) it is an OAuth-protected resource as
the MCP authorization spec describes: RFC 9728 metadata at /.well-known/oauth-protected-resource/mcp naming that
server, a 401 with `WWW-Authenticate: Bearer resource_metadata=...` for a missing or dead token, and only the
access tokens that server issued (and has not expired or revoked) accepted.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer


class FakeMCPServer:
    def __init__(self, *, token: str | None = None, extra_tools: int = 0, authorization_server: Any = None):
        self.token = token
        self.authorization_server = authorization_server
        self.seen_auth: list[str | None] = []
        self.calls: list[tuple[str, dict]] = []
        # uvicorn serves on this socket, bound here: a port chosen then released could be taken meanwhile.
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        server = MCPServer("fake-mcp")

        @server.tool()
        def add(a: int, b: int) -> int:
            """Add two integers."""
            self.calls.append(("add", {"a": a, "b": b}))
            return a + b

        @server.tool()
        def echo(text: str) -> str:
            """Echo the text back."""
            self.calls.append(("echo", {"text": text}))
            return f"echo: {text}"

        @server.tool()
        def weather(city: str) -> str:
            """Current weather for a city."""
            self.calls.append(("weather", {"city": city}))
            return f"Sunny in {city}"

        for i in range(1, extra_tools + 1):
            name = f"tool_{i:02d}"

            def make(n: str):
                def fn(x: str = "") -> str:
                    return f"{n}:{x}"

                fn.__name__ = n
                fn.__doc__ = f"Generated tool number {n[-2:]} about topic{n[-2:]} invoices."
                return fn

            server.tool()(make(name))

        app = server.streamable_http_app(stateless_http=True, json_response=True)
        outer = self

        async def guarded(scope, receive, send):
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
                auth = headers.get("authorization")
                path = scope.get("path", "")
                if outer.authorization_server is not None and path.startswith("/.well-known/"):
                    await outer._send_json(send, *outer._resource_metadata(path))
                    return
                outer.seen_auth.append(auth)
                if outer.authorization_server is not None and not outer.authorization_server.token_valid(
                        (auth or "").removeprefix("Bearer ")):
                    challenge = f'Bearer resource_metadata="{outer.resource_metadata_url}"'
                    await send({"type": "http.response.start", "status": 401,
                                "headers": [(b"content-type", b"application/json"),
                                            (b"www-authenticate", challenge.encode())]})
                    await send({"type": "http.response.body", "body": b'{"error":"invalid_token"}'})
                    return
                if outer.token and auth != f"Bearer {outer.token}":
                    await send({"type": "http.response.start", "status": 401,
                                "headers": [(b"content-type", b"application/json")]})
                    await send({"type": "http.response.body", "body": b'{"error":"unauthorized"}'})
                    return
            await app(scope, receive, send)

        config = uvicorn.Config(guarded, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    @property
    def resource_metadata_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/.well-known/oauth-protected-resource/mcp"

    def _resource_metadata(self, path: str) -> tuple[int, dict]:
        if path not in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            return 404, {"error": "not_found"}
        return 200, {"resource": self.url, "authorization_servers": [self.authorization_server.issuer],
                     "scopes_supported": list(self.authorization_server.scopes),
                     "bearer_methods_supported": ["header"]}

    @staticmethod
    async def _send_json(send, status: int, payload: dict) -> None:
        import json

        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(payload).encode()})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> FakeMCPServer:
        self.thread.start()
        deadline = time.monotonic() + 30  # a loaded machine starts a thread slowly; a dead one says so
        while time.monotonic() < deadline and self.thread.is_alive():
            if self.server.started:
                return self
            time.sleep(0.02)
        raise RuntimeError("the fake MCP server did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.socket.close()
