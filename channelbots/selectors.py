"""Reads other parts of the product need about channel threads.

Speaking in a thread is a claim; the platform decides whether it is still true. `is_participant` confirms a
member's claim against the platform's current membership (conversations.members, getChatMember, the
Mattermost member lookup) behind a ~1-minute shared Redis cache, and fails closed: a platform that cannot
answer, a bot that is gone, or a thread whose session no longer names a chat all say no. The owner of a
thread keeps access regardless (that is `can_write`'s first rule, and the conversation list's own).
"""

from __future__ import annotations

import logging

import redis

from agenticos import ratelimit
from agents.models import Conversation, Message
from channelbots.models import ChannelIdentity, ChannelSession
from channelbots.platforms import PlatformError, client_for

logger = logging.getLogger(__name__)

CACHE_SECONDS = 60


def _cached(key: str) -> bool | None:
    try:
        value = ratelimit.client().get(key)
    except redis.RedisError:
        return None
    return None if value is None else value == b"1"


def _store(key: str, value: bool) -> None:
    try:
        ratelimit.client().set(key, b"1" if value else b"0", ex=CACHE_SECONDS)
    except redis.RedisError:
        logger.info("membership cache unavailable")


def participant_identities(conversation: Conversation, user_id) -> list[ChannelIdentity]:
    """The user's linked chat accounts that wrote in this thread (the claim): the account each turn records
    (`Message.chat_identity`), or for turns written before it did, the run's account label."""
    turns = Message.objects.filter(conversation=conversation, role="user")
    written = set(turns.filter(chat_identity__user_id=user_id).values_list("chat_identity_id", flat=True))
    labels = set(turns.filter(chat_identity__isnull=True, run__chat_account__gt="")
                 .values_list("run__chat_account", flat=True))
    return [i for i in ChannelIdentity.objects.filter(organization_id=conversation.organization_id, user_id=user_id)
            if i.pk in written or i.label in labels]


def is_participant(conversation: Conversation, user_id) -> bool:
    session = ChannelSession.objects.select_related("bot").filter(conversation=conversation).first()
    if session is None or not session.chat_id:
        return False
    for identity in participant_identities(conversation, user_id):
        key = f"agenticos:chmember:{session.bot_id}:{session.chat_id}:{identity.account_id}"
        cached = _cached(key)
        if cached is None:
            try:
                cached = client_for(session.bot).is_member(session.chat_id, identity.account_id)
            except PlatformError as exc:
                logger.info("membership of %s in %s unconfirmed (%s)", identity.label, session.chat_id, exc)
                cached = False  # fail closed
            _store(key, cached)
        if cached:
            return True
    return False


def can_read(conversation: Conversation, user_id) -> bool:
    return conversation.owner_id == user_id or is_participant(conversation, user_id)


def can_write(conversation: Conversation, user_id) -> bool:
    """Rename / delete / append: the owner; in an ownerless thread, its confirmed participants."""
    if conversation.owner_id is not None:
        return conversation.owner_id == user_id
    return is_participant(conversation, user_id)
