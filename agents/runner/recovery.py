"""What a lost worker leaves behind, and how its runs are found.

A run's row gets a heartbeat from its worker's pulse (`loop.beat_rows`, every RUN_HEARTBEAT_SECONDS); a run
still `running` whose heartbeat is older than RUN_HEARTBEAT_STALE_AFTER lost its worker (SIGKILL, OOM, a lost
host). Whether it may simply run again depends on one thing: did this execution reach the model? The runner
marks it in Redis just before its first model request (one key per run, deleted when the run parks or ends):
an execution that never got that far has spent nothing and shown nobody anything, so the sweep puts it back in
the queue; one that did is ended `failed` — running it again could call the model (and its tools) twice.

Redis, not a column: the mark is written once per execution on the hot path, and a Redis round trip costs
the turn nothing a database statement would (the turn's four statements stay four). When Redis cannot
answer, the sweep assumes the model was reached: a run is failed rather than ever executed twice.
"""

from __future__ import annotations

import logging
from typing import Any

import redis

from agenticos import ratelimit

logger = logging.getLogger(__name__)

# Longer than any run lives; the key is deleted when the run parks or ends, this only bounds a leak.
MARK_TTL_SECONDS = 3 * 24 * 3600


def _key(run_id: Any) -> str:
    return ratelimit.redis_name("run-reached-model", run_id)


def mark_reached_model(run_id: Any) -> None:
    """Before the execution's first model request. Sync (Redis)."""
    try:
        ratelimit.client().set(_key(run_id), b"1", ex=MARK_TTL_SECONDS)
    except redis.RedisError:
        # The sweep treats an unanswered question as "reached": nothing runs twice because of this.
        logger.warning("could not mark run %s as having reached the model", run_id)


def forget(run_id: Any) -> None:
    """The run parked or ended: its next execution starts unmarked. Sync (Redis)."""
    try:
        ratelimit.client().delete(_key(run_id))
    except redis.RedisError:
        logger.warning("could not clear the model mark of run %s", run_id)


def never_reached_model(run_ids: list[Any]) -> set[str]:
    """Of these runs, those whose current execution certainly never sent a model request."""
    if not run_ids:
        return set()
    try:
        marks = ratelimit.client().mget([_key(run_id) for run_id in run_ids])
    except redis.RedisError:
        return set()
    return {str(run_id) for run_id, mark in zip(run_ids, marks, strict=True) if mark is None}
