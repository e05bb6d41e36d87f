"""Domain filter entries: exact hosts, stored in the one spelling DNS would be asked for.

Lowercase, no root label, IDNA-encoded. An entry that could never match (wildcard, scheme, path, port,
empty allow-list) is refused at publish; an empty block-list reads as unset.
"""

from __future__ import annotations

from agenticos.netguard import domain_key


def normalize(entry: str) -> str:
    raw = str(entry).strip()
    if not raw:
        raise ValueError("an empty entry never matches")
    if "*" in raw:
        raise ValueError(f"{raw!r}: wildcards are not supported; list each exact host")
    if "://" in raw:
        raise ValueError(f"{raw!r}: give the bare host name, without a scheme")
    if "/" in raw:
        raise ValueError(f"{raw!r}: give the bare host name, without a path")
    if ":" in raw.strip("[]") and raw.count(":") == 1:
        raise ValueError(f"{raw!r}: give the bare host name, without a port")
    return domain_key(raw)


def normalize_list(entries: list[str] | None, *, allow_list: bool) -> list[str] | None:
    if entries is None:
        return None
    if not entries:
        if allow_list:
            raise ValueError("an empty allow-list would refuse every page; leave it unset to allow any host")
        return None
    return list(dict.fromkeys(normalize(e) for e in entries))
