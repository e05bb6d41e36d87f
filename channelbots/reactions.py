"""👍/👎 reactions in Slack, Telegram and Mattermost as feedback on the run that posted the message.

The bot remembers the messages of each answer it posted (`PostedReply`, written when the reply ends); a thumb
added on one of them rates that run's answer (agents.feedback.give_outside: the chat account is the rater, one
rating per account and answer, like a member's), and the same thumb taken away takes the rating back. A reaction on
any other message — a person's, another bot's, another organization's bot's — is nobody's feedback and is ignored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError

from agents import feedback as feedback_service
from agents.models import Feedback
from channelbots.models import ChannelBot, ChannelIdentity, PostedReply

logger = logging.getLogger(__name__)

# Slack and Mattermost name emoji (with a skin tone after "::"), Telegram sends the character itself.
UP = {"+1", "thumbsup", "thumbs_up", "👍"}
DOWN = {"-1", "thumbsdown", "thumbs_down", "👎"}


def rating_of(emoji: str) -> str | None:
    name = str(emoji or "").split("::", 1)[0].replace("\ufe0f", "")
    name = "".join(ch for ch in name if not 0x1F3FB <= ord(ch) <= 0x1F3FF)  # a Telegram/Unicode skin tone
    if name in UP:
        return Feedback.Rating.UP
    if name in DOWN:
        return Feedback.Rating.DOWN
    return None


@dataclass(frozen=True)
class Reaction:
    chat_id: str  # "" when the platform does not say (Mattermost post ids are unique on their server)
    message_ref: str
    account_id: str
    workspace: str
    rating: str | None  # the thumb now given; None: no thumb any more
    removed: str | None = None  # the thumb taken away (Slack, Mattermost: one event per emoji)


def remember(bot: ChannelBot, chat_id: str, refs: Iterable[str], run_id: Any) -> None:
    """The messages of a run's answer, so that a reaction on any of them finds the run."""
    for ref in {r for r in refs if r}:
        try:
            PostedReply.objects.get_or_create(bot=bot, chat_id=str(chat_id), message_ref=str(ref),
                                              defaults={"organization_id": bot.organization_id, "run_id": run_id})
        except IntegrityError:  # the same message remembered by a redelivered reply: the first run keeps it
            logger.info("bot %s: message %s is already remembered", bot.pk, ref)


# ------------------------------------------------------------------ the platforms' events


def slack_reaction(payload: dict[str, Any]) -> Reaction | None:
    """An Events API `reaction_added` / `reaction_removed` on a message, or None."""
    if payload.get("type") != "event_callback":
        return None
    event = payload.get("event") or {}
    kind = event.get("type")
    item = event.get("item") or {}
    if kind not in ("reaction_added", "reaction_removed") or item.get("type") != "message":
        return None
    thumb = rating_of(str(event.get("reaction") or ""))
    if thumb is None:
        return None
    return Reaction(chat_id=str(item.get("channel") or ""), message_ref=str(item.get("ts") or ""),
                    account_id=str(event.get("user") or ""), workspace=str(payload.get("team_id") or ""),
                    rating=thumb if kind == "reaction_added" else None,
                    removed=thumb if kind == "reaction_removed" else None)


def telegram_reaction(update: dict[str, Any]) -> Reaction | None:
    """A `message_reaction` update (the person's whole set of reactions on a message, old and new), or None when no
    thumb was given or taken."""
    change = update.get("message_reaction")
    if not isinstance(change, dict):
        return None

    def thumbs(reactions: Any) -> list[str]:
        found = [rating_of(str(r.get("emoji") or "")) for r in reactions or [] if isinstance(r, dict)
                 and r.get("type") == "emoji"]
        return [t for t in found if t]

    new, old = thumbs(change.get("new_reaction")), thumbs(change.get("old_reaction"))
    if not new and not old:
        return None
    user = change.get("user") or {}
    if not user.get("id"):
        return None  # an anonymous admin or a channel's reaction: no one to name
    return Reaction(chat_id=str((change.get("chat") or {}).get("id") or ""), message_ref=str(change.get("message_id") or ""),
                    account_id=str(user["id"]), workspace="", rating=new[-1] if new else None,
                    removed=None if new else old[-1])


def mattermost_reaction(event: dict[str, Any]) -> Reaction | None:
    """A WebSocket `reaction_added` / `reaction_removed` event, or None."""
    kind = event.get("event")
    if kind not in ("reaction_added", "reaction_removed"):
        return None
    raw = (event.get("data") or {}).get("reaction")
    try:
        reaction = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    if not isinstance(reaction, dict):
        return None
    thumb = rating_of(str(reaction.get("emoji_name") or ""))
    if thumb is None:
        return None
    return Reaction(chat_id=str((event.get("broadcast") or {}).get("channel_id") or ""),
                    message_ref=str(reaction.get("post_id") or ""), account_id=str(reaction.get("user_id") or ""),
                    workspace="", rating=thumb if kind == "reaction_added" else None,
                    removed=thumb if kind == "reaction_removed" else None)


# ------------------------------------------------------------------ applying one


def apply(bot: ChannelBot, reaction: Reaction) -> str:
    """Store (or take back) the rating a reaction gives. What happened, for the log and the tests."""
    if not reaction.message_ref or not reaction.account_id or reaction.account_id == bot.platform_bot_user_id:
        return "ignored"
    posted = PostedReply.objects.select_related("run").filter(bot=bot, organization_id=bot.organization_id,
                                                               message_ref=reaction.message_ref)
    if reaction.chat_id:
        posted = posted.filter(chat_id=reaction.chat_id)
    found = posted.first()
    if found is None:
        return "not_ours"
    answer = feedback_service.run_answer(found.run)
    if answer is None:
        return "no_answer"
    rater = f"{bot.platform}:{reaction.workspace}:{reaction.account_id}"
    if reaction.rating is None:
        given = Feedback.objects.filter(message=answer, user=None, rater=rater).values_list("rating", flat=True).first()
        if given is None or (reaction.removed and given != reaction.removed):
            return "ignored"  # took away a thumb that is not the one they rated with
        feedback_service.withdraw_outside(message=answer, rater=rater)
        return "withdrawn"
    identity = ChannelIdentity.objects.filter(organization_id=bot.organization_id, platform=bot.platform,
                                              account_id=reaction.account_id).first()
    label = (identity.display_name if identity and identity.display_name else reaction.account_id)
    feedback_service.give_outside(message=answer, source=bot.platform, rater=rater,
                                  rater_label=f"{label} ({bot.get_platform_display()})", rating=reaction.rating)
    return "rated"


def handle(bot: ChannelBot, reaction: Reaction | None) -> bool:
    """True when the event was a thumb reaction (handled here, whatever came of it): the caller stops there."""
    if reaction is None:
        return False
    try:
        outcome = apply(bot, reaction)
    except Exception:  # a rating lost is not worth a platform's redelivery storm
        logger.exception("bot %s: a reaction could not be stored", bot.pk)
        return True
    logger.info("bot %s: reaction on %s: %s", bot.pk, reaction.message_ref, outcome)
    return True
