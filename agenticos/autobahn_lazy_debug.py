"""autobahn's debug lines cost nothing while debug logging is off.

autobahn (daphne's WebSocket layer) writes a debug line for every frame it sends (`sendData`) and at every
connection's open and close, and builds the line's highlighted values first whether or not the line is written:
`hltype` inspects the method's qualified name and `hlval` styles each value through click, a few µs per frame sent
to every socket — with hundreds of widget sockets streaming, a few percent of daphne's CPU for lines nobody reads
(txaio drops a debug call at once below its level, but its arguments were already made). Here the two helpers, as
`autobahn.websocket.protocol` calls them, return a value that makes the same text only when a line is formatted:
with debug on, the lines read as before. Imported by `config.asgi`, as `agenticos.daphne_close_reason` is.

Only `hltype` and `hlval` are swapped: in that module they appear only as arguments of `self.log.debug(…)` (its
`pformat`, also eager, is left alone: `Timings.__str__` returns it as a str).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import autobahn.websocket.protocol as _protocol
from autobahn.util import hltype, hlval


class Deferred:
    """`fn(value)`, made when formatted (str, format or repr)."""

    __slots__ = ("fn", "value")

    def __init__(self, fn: Callable[[Any], str], value: Any) -> None:
        self.fn = fn
        self.value = value

    def __str__(self) -> str:
        return self.fn(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.fn(self.value), spec)

    __repr__ = __str__


def lazy_hltype(obj: Any) -> Deferred:
    return Deferred(hltype, obj)


def lazy_hlval(value: Any, color: str = "white", bold: bool = True) -> Deferred:
    return Deferred(lambda v: hlval(v, color=color, bold=bold), value)


_protocol.hltype = lazy_hltype  # type: ignore[attr-defined]
_protocol.hlval = lazy_hlval  # type: ignore[attr-defined]
