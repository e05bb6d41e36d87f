"""A local MCP server over SSE (the `mcp` package's MCPServer.sse_app under uvicorn, in a thread).

GET /events opens the event stream (its first event names the message endpoint), POST /messages/?session_id=…
carries the client's JSON-RPC requests. Tools: add(a, b), big(lines) (a long text result), echo(text).
With `token` set every request must carry `Authorization: Bearer <token>`. Every request's Host header and
path are recorded in `seen`, so a test can tell which name the client asked for and that it really arrived.
The SDK's DNS-rebinding guard is told about `extra_hosts` (names a test pins to 127.0.0.1).
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings


class SseMCPServer:
    def __init__(self, *, token: str | None = None, extra_hosts: tuple[str, ...] = ()):
        self.token = token
        self.seen: list[tuple[str, str, str | None]] = []  # (host header, path, authorization)
        self.calls: list[tuple[str, dict]] = []
        # uvicorn serves on this socket, bound here: a port chosen then released could be taken meanwhile.
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        server = MCPServer("fake-sse-mcp")

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
        def big(lines: int) -> str:
            """A long report, one numbered line each."""
            self.calls.append(("big", {"lines": lines}))
            return "\n".join(f"line {i:05d} of the quarterly report" for i in range(lines))

        hosts = ["127.0.0.1:*", *(f"{h}:*" for h in extra_hosts)]
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                             allowed_origins=[f"http://{h}" for h in hosts])
        # Not /sse: a client that guessed the transport from the URL would pick streamable HTTP and fail.
        app = server.sse_app(sse_path="/events", transport_security=security)
        outer = self

        async def guarded(scope, receive, send):
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
                auth = headers.get("authorization")
                outer.seen.append((headers.get("host", ""), scope["path"], auth))
                if outer.token and auth != f"Bearer {outer.token}":
                    await send({"type": "http.response.start", "status": 401,
                                "headers": [(b"content-type", b"application/json")]})
                    await send({"type": "http.response.body", "body": b'{"error":"unauthorized"}'})
                    return
            await app(scope, receive, send)

        config = uvicorn.Config(guarded, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    def url_for(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/events"

    @property
    def url(self) -> str:
        return self.url_for()

    def start(self) -> SseMCPServer:
        self.thread.start()
        deadline = time.monotonic() + 30  # a loaded machine starts a thread slowly; a dead one says so
        while time.monotonic() < deadline and self.thread.is_alive():
            if self.server.started:
                return self
            time.sleep(0.02)
        raise RuntimeError("the fake SSE MCP server did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.socket.close()
