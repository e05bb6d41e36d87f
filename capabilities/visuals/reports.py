"""How the watching console tells `draw` what happened when the drawing ran: script errors, failed loads,
refused requests. The console posts to /api/v1/visuals/reports; `draw` waits on the same Redis list.

The key is the drawing's digest (sha256 of kind + "\\n" + content), which both sides compute from what they
already have — the browser sees the tool call's arguments before the tool runs — under the organization and
the person: a report from someone else's console never answers your drawing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import redis.asyncio as aioredis
from django.conf import settings

from agenticos.ratelimit import client, redis_name

logger = logging.getLogger(__name__)

KEEP_SECONDS = 120
SOCKET_MARGIN_SECONDS = 5
PER_MINUTE = 120  # reports one person may file a minute (POST /api/v1/visuals/reports)
MAX_ERRORS = 20
MAX_ERROR_CHARS = 500


def digest(kind: str, content: str) -> str:
    return hashlib.sha256(f"{kind}\n{content}".encode()).hexdigest()


def key(organization_id: Any, user_id: Any, drawing: str) -> str:
    return redis_name("visual-report", organization_id, user_id, drawing)


def put(organization_id: Any, user_id: Any, drawing: str, errors: list[str]) -> int:
    """File the report; the number of errors kept."""
    cleaned = [str(e)[:MAX_ERROR_CHARS] for e in errors[:MAX_ERRORS]]
    name = key(organization_id, user_id, drawing)
    pipe = client().pipeline()
    pipe.rpush(name, json.dumps({"errors": cleaned}))
    pipe.expire(name, KEEP_SECONDS)
    pipe.execute()
    return len(cleaned)


async def wait(organization_id: Any, user_id: Any, drawing: str, seconds: float) -> list[str] | None:
    """The reported errors ([] = it rendered cleanly), or None when no report came in time."""
    if seconds <= 0:
        return None
    # The socket must outlast the blocking pop: redis-py's default socket timeout (5 s) ended a longer wait with
    # a TimeoutError that failed the whole run as if the model provider had not answered.
    connection = aioredis.Redis.from_url(settings.REDIS_URL, socket_timeout=seconds + SOCKET_MARGIN_SECONDS)
    try:
        found = await connection.blpop([key(organization_id, user_id, drawing)], timeout=seconds)
    except aioredis.RedisError as exc:
        # A drawing is still drawn when Redis cannot say how it rendered: "not checked", never a failed run.
        logger.warning("visual report wait failed (%s): the drawing stays unchecked", type(exc).__name__)
        return None
    finally:
        await connection.aclose()
    if found is None:
        return None
    try:
        return [str(e) for e in json.loads(found[1]).get("errors") or []]
    except (ValueError, AttributeError):
        return None
