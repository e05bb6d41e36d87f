"""A bare ASGI app for a real daphne: a WebSocket that closes with the code and reason its first frame names
(`"1011 This client was not reading."`), and 200 on any HTTP path (live_daphne waits on /healthz). With the
project's close shim (agenticos.daphne_close_reason) applied, as config.asgi applies it."""

from __future__ import annotations

from typing import Any

import agenticos.daphne_close_reason  # noqa: F401  (patches daphne's close, as config.asgi does)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    if scope["type"] != "websocket":
        return
    while True:
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
        elif message["type"] == "websocket.receive":
            code, _, reason = (message.get("text") or "").partition(" ")
            await send({"type": "websocket.close", "code": int(code), **({"reason": reason} if reason else {})})
        else:
            return
