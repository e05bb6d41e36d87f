"""The entries of an operator's allowance of private hosts (`MODEL_ALLOWED_PRIVATE_HOSTS`, `TOOL_…`, …).

An entry is a host name, an address or a network, optionally with a port: `localhost`, `10.0.0.0/8`, `fd00::/8`,
`localhost:11434`, `127.0.0.1:1234`, `[::1]:11434`. With a port it admits that port only, so an operator can let
model profiles reach a local Ollama (11434) without opening every other service on the machine's loopback (the
database, Redis, the sandbox service, the platform itself). An IPv6 address takes a port only in brackets
(`[::1]:11434`); a bare `::1` is the address on every port.

No Django here: the settings module parses the lists with it at start-up (a malformed entry stops the start, it
is never silently ignored) and the outbound guard matches with it on every request.
"""

from __future__ import annotations

from typing import NamedTuple

from agenticos.strings import digits_only


class Entry(NamedTuple):
    host: str  # a name, an address or a network, without brackets
    port: int | None  # None: every port


def parse(entry: str) -> Entry:
    """One entry; raises ValueError for a port that is not a number in 1–65535 or an unclosed bracket."""
    text = entry.strip()
    if not text:
        raise ValueError("an empty entry")
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        if not closed or not host:
            raise ValueError(f"{entry!r}: an opening bracket without its closing one")
        if not rest:
            return Entry(host, None)
        if not rest.startswith(":"):
            raise ValueError(f"{entry!r}: after ']' only ':port' may follow")
        return Entry(host, _port(entry, rest[1:]))
    if text.count(":") == 1:  # host:port (IPv4, a name or an IPv4 network); more colons make an IPv6 address
        host, _, port = text.partition(":")
        if not host:
            raise ValueError(f"{entry!r}: a port without a host")
        return Entry(host, _port(entry, port))
    return Entry(text, None)


def _port(entry: str, text: str) -> int:
    if not digits_only(text) or not 0 < int(text) < 65536:
        raise ValueError(f"{entry!r}: the port must be a number from 1 to 65535")
    return int(text)


def parse_all(entries: list[str], setting: str) -> list[str]:
    """The list as given, after checking every entry parses; the message names the setting and the entry."""
    for entry in entries:
        try:
            parse(entry)
        except ValueError as exc:
            raise ValueError(f"{setting}: {exc}") from None
    return entries


def spell(host: str, port: int) -> str:
    """The entry that admits exactly `host` on `port` (IPv6 in brackets), for a refusal's hint."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
