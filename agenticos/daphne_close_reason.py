"""Send the ASGI close reason on the wire under daphne.

The surfaces spec gives every refusal a close code *and* a reason the client can show ("not allowed", "too many
connections"); the ASGI spec carries it as `reason` on `websocket.close`, but daphne 4.2 drops it and sends the
code alone (django/daphne#374, open). Until a release forwards it, `serverClose` is given the reason here:
autobahn's `sendClose` already takes one. The reason is cut to the 123 bytes a close frame allows, on a
character boundary. Imported by `config.asgi`, so the tests' ASGI app and every daphne process get it.

autobahn's `sendClose` also refuses every code but 1000 and 3000–4999 ("invalid close code"), RFC 6455 codes a
server may send among them: the surfaces spec's 1011 ("this client was not reading — reconnect") raised inside
the application's `send`, the consumer died, and the client got daphne's own 1011 for an exception, without
the reason and with a traceback in the log. Those codes are written with `sendCloseFrame`, which is what
daphne itself does for its 1011.
"""

from __future__ import annotations

from typing import Any

from daphne.ws_protocol import WebSocketProtocol

_MAX_REASON_BYTES = 123  # RFC 6455 §5.5: a control frame's payload is at most 125 bytes, 2 of them the code.
# RFC 6455 §7.4.1 codes a server may send that autobahn's sendClose refuses (1010 is the client's alone).
_RFC_SERVER_CODES = frozenset({1001, 1002, 1003, 1007, 1008, 1009, 1011})
_handle_reply = WebSocketProtocol.handle_reply


def _handle_reply_with_reason(self: Any, message: dict[str, Any]) -> None:
    is_close = message.get("type") == "websocket.close" and self.state != self.STATE_CONNECTING
    code = (message.get("code") or 1000) if is_close else None
    reason = str(message.get("reason") or "") if is_close else ""
    if code is None or not (reason or code in _RFC_SERVER_CODES):
        _handle_reply(self, message)
        return
    cut = reason.encode("utf-8")[:_MAX_REASON_BYTES].decode("utf-8", "ignore")
    if code in _RFC_SERVER_CODES:
        self.sendCloseFrame(code=code, reasonUtf8=cut.encode("utf-8") or None, isReply=False)
    else:
        self.sendClose(code=code, reason=cut)


WebSocketProtocol.handle_reply = _handle_reply_with_reason  # type: ignore[method-assign]
