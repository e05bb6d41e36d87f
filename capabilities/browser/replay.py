"""A task already done goes faster the second time, for the same person.

When a browse_web that acts for a person finishes (`done`), the clicks that led there are kept for that person
only: the page address and the label of each thing clicked, never anything typed — recording stops at the first
field filled (or option chosen, URL opened, page gone back), since a click after it may depend on what was typed.
The next time the same person asks the same task from the same start_url, those clicks are done without the
model while the page still offers them (same address, a row of the same kind and label); the model takes over at
the first difference. A replay that does not end `done` is discarded. Kept in Redis two weeks from the last time
the task was done; the key names the organization, the person and the agent, so nobody else reads it.

Which runs act for a person: web chat (the person's own conversation). A channel run cannot tell here whether
it is a direct message, and a trigger may borrow its creator's authority without being theirs, so neither
records.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import timedelta
from typing import Any

TTL = timedelta(days=14)
SURFACES = frozenset({"web"})
MAX_CLICKS = 50


def key_for(deps: Any, task: str, start_url: str) -> str | None:
    """The person's key for this task, or None when the run does not act for one person."""
    from agenticos import ratelimit

    if not getattr(deps, "user_id", None) or getattr(deps, "surface", "") not in SURFACES:
        return None
    digest = hashlib.sha256(f"{' '.join(task.split()).lower()}\n{start_url}".encode()).hexdigest()
    return ratelimit.redis_name("browser-replay", deps.organization_id, deps.user_id, deps.agent_id, digest)


def _client() -> Any:
    from agenticos import ratelimit

    return ratelimit.client()


def _load(key: str) -> list[dict[str, str]]:
    raw = _client().get(key)
    if not raw:
        return []
    try:
        clicks = json.loads(raw)
    except ValueError:
        return []
    return [c for c in clicks if isinstance(c, dict) and {"url", "kind", "label"} <= set(c)][:MAX_CLICKS]


def _save(key: str, clicks: list[dict[str, str]]) -> None:
    _client().set(key, json.dumps(clicks[:MAX_CLICKS]), ex=int(TTL.total_seconds()))


def _discard(key: str) -> None:
    _client().delete(key)


async def load(key: str) -> list[dict[str, str]]:
    return await asyncio.to_thread(_load, key)


async def save(key: str, clicks: list[dict[str, str]]) -> None:
    await asyncio.to_thread(_save, key, clicks)


async def discard(key: str) -> None:
    await asyncio.to_thread(_discard, key)


def matching_row(view: Any, click: dict[str, str]) -> int | None:
    """The row (1-based) of this page that is the recorded click, or None at the first difference."""
    if view.url != click["url"]:
        return None
    for index, row in enumerate(view.rows, start=1):
        if row.get("kind") == click["kind"] and row.get("label") == click["label"] and click["label"]:
            return index
    return None
