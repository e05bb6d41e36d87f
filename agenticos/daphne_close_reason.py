"""Send the ASGI close reason on the wire under daphne.

The surfaces spec gives every refusal a close code *and* a reason the client can show ("not allowed", "too many
connections"); the ASGI spec carries it as `reason` on `websocket.close`, but daphne 4.2 drops it and sends the
code alone (django/daphne#374, open). Until a release forwards it, `serverClose` is given the reason here:
autobahn's `sendClose` already takes one. The reason is cut to the 123 bytes a close frame allows, on a
character boundary. Imported by `agenticos.asgi`, so the tests' ASGI app and every daphne process get it.
"""

from __future__ import annotations

from typing import Any

from daphne.ws_protocol import WebSocketProtocol

_MAX_REASON_BYTES = 123  # RFC 6455 §5.5: a control frame's payload is at most 125 bytes, 2 of them the code.
_handle_reply = WebSocketProtocol.handle_reply


def _handle_reply_with_reason(self: Any, message: dict[str, Any]) -> None:
    reason = message.get("reason") if message.get("type") == "websocket.close" else None
    if reason and self.state != self.STATE_CONNECTING:
        cut = str(reason).encode("utf-8")[:_MAX_REASON_BYTES].decode("utf-8", "ignore")
        self.sendClose(code=message.get("code") or 1000, reason=cut)
        return
    _handle_reply(self, message)


WebSocketProtocol.handle_reply = _handle_reply_with_reason  # type: ignore[method-assign]
