"""Exactly-once answers: claim each delivery in Redis (SET NX) before any work.

Every entry path (three webhook routes, three streams) passes `router.accept`, which calls `claim`. The
guarantee degrades open: no platform message id, or Redis unreachable → the message is processed anyway and
a warning says the guarantee was off for that delivery (a duplicate answer is rarer and cheaper than a lost
question).

A claim is short until the run exists: taken for CHANNELBOTS_CLAIM_PENDING_SECONDS (2 minutes) at receipt and
again when the task picks the message up, and held for 15 minutes only once the run is started (`hold`). A
process that died in between (a worker killed, a pod restarted) leaves a claim that lapses in minutes, so the
platform's redelivery is answered instead of dropped as a duplicate of a message nobody is answering.
"""

from __future__ import annotations

import logging
from enum import StrEnum

import redis

from agenticos import ratelimit

logger = logging.getLogger(__name__)

CLAIM_TTL_SECONDS = 15 * 60
PENDING_TTL_SECONDS = 2 * 60


def pending_ttl() -> int:
    from django.conf import settings

    return int(getattr(settings, "CHANNELBOTS_CLAIM_PENDING_SECONDS", PENDING_TTL_SECONDS))


class Claim(StrEnum):
    CLAIMED = "claimed"
    DUPLICATE = "duplicate"
    UNGUARDED = "unguarded"  # processed without the guarantee


def client() -> redis.Redis:
    return ratelimit.client()


def key_for(bot_id: str, chat_id: str, message_id: str) -> str:
    return f"agenticos:chdedup:{bot_id}:{chat_id}:{message_id}"


def claim(bot_id: str, chat_id: str, message_id: str | None, *, via: str = "") -> Claim:
    if not message_id:
        logger.warning(
            "channel bot %s: a message without a platform id arrived via %s; processed without the "
            "exactly-once guarantee", bot_id, via or "?",
        )
        return Claim.UNGUARDED
    try:
        taken = client().set(key_for(bot_id, chat_id, message_id), "pending", nx=True, ex=pending_ttl())
    except redis.RedisError as exc:
        logger.warning(
            "channel bot %s: Redis unreachable (%s); message %s processed without the exactly-once guarantee",
            bot_id, type(exc).__name__, message_id,
        )
        return Claim.UNGUARDED
    return Claim.CLAIMED if taken else Claim.DUPLICATE


def _extend(bot_id: str, chat_id: str, message_id: str | None, seconds: int, state: str) -> None:
    if not message_id:
        return
    try:
        client().set(key_for(bot_id, chat_id, message_id), state, ex=seconds)
    except redis.RedisError:
        logger.warning("channel bot %s: could not extend the claim on %s", bot_id, message_id)


def refresh(bot_id: str, chat_id: str, message_id: str | None) -> None:
    """The task picked the message up: a short claim again (the queue may have taken most of the first)."""
    _extend(bot_id, chat_id, message_id, pending_ttl(), "working")


def hold(bot_id: str, chat_id: str, message_id: str | None) -> None:
    """The run is started: the claim now outlives every platform's redelivery window."""
    _extend(bot_id, chat_id, message_id, CLAIM_TTL_SECONDS, "started")


def release(bot_id: str, chat_id: str, message_id: str | None) -> None:
    """A run this process could not finish gives its claim back, so the redelivery is answered."""
    if not message_id:
        return
    try:
        client().delete(key_for(bot_id, chat_id, message_id))
    except redis.RedisError:
        logger.warning("channel bot %s: could not release the claim on %s", bot_id, message_id)
