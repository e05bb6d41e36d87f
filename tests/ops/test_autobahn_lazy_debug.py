"""agenticos.autobahn_lazy_debug: autobahn's debug lines are built only when written — a frame sent with debug
off styles nothing, and a line formatted with debug on reads exactly as autobahn's own helpers write it."""

from __future__ import annotations

import autobahn.util
import autobahn.websocket.protocol as protocol

import config.asgi  # noqa: F401  (what every daphne process imports: it applies the swap)
from agenticos.autobahn_lazy_debug import Deferred


def test_the_protocol_module_uses_the_lazy_helpers():
    assert isinstance(protocol.hltype(protocol.WebSocketProtocol.sendData), Deferred)
    assert isinstance(protocol.hlval(12), Deferred)


def test_a_formatted_line_reads_as_autobahn_writes_it():
    method = protocol.WebSocketProtocol.sendData
    line = "{func} sent {data_len} bytes for peer {peer}"
    assert line.format(func=protocol.hltype(method), data_len=protocol.hlval(12), peer=protocol.hlval("tcp:1.2.3.4")) \
        == line.format(func=autobahn.util.hltype(method), data_len=autobahn.util.hlval(12),
                       peer=autobahn.util.hlval("tcp:1.2.3.4"))
    assert str(protocol.hlval("x", color="red", bold=False)) == autobahn.util.hlval("x", color="red", bold=False)


def test_a_value_not_formatted_is_never_styled(monkeypatch):
    styled = []
    monkeypatch.setattr(autobahn.util, "hl", lambda *args, **kwargs: styled.append(args) or "")
    protocol.hltype(protocol.WebSocketProtocol.sendData)
    protocol.hlval(12)
    assert styled == []
