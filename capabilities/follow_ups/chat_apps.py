"""Follow-ups in a chat app: after the reply, the steps are posted in its thread as the platform's buttons, and
a click is a new message from the person who clicked.

The click goes through the same path as a typed message (`channelbots.router.accept`): the router looks the
sender up again, checks the bot's binding, its access policy and the room membership before anything runs, so
a button never lends anyone more than typing the same text would. Only Slack so far (Block Kit buttons on the
signed interactions route); Telegram and Mattermost get no buttons yet.
"""

from __future__ import annotations

import logging
from typing import Any

from capabilities.follow_ups.models import FollowUp

logger = logging.getLogger(__name__)

ACTION = "agenticos_follow_up"  # Slack action_id prefix; the index follows ("agenticos_follow_up_0")
HEADLINE = "Suggested next steps:"


def post(follow_up: FollowUp) -> str:
    """Post the steps in the thread the answer went to. Returns what happened (logs, tests)."""
    from channelbots.models import ChannelBot, Platform
    from channelbots.platforms import PlatformError, client_for

    channel = (follow_up.source_run.options or {}).get("channel") or {}
    bot_id = str(channel.get("bot_id") or "")
    bot = (ChannelBot.objects.filter(pk=bot_id, organization_id=follow_up.organization_id).first()
           if bot_id else None)
    if bot is None or bot.is_paused or not channel.get("chat_id"):
        return "no_channel"
    if bot.platform != Platform.SLACK:
        return "unsupported"
    chat_id, thread = str(channel["chat_id"]), str(channel.get("thread") or "")
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": HEADLINE}},
        {"type": "actions", "elements": [
            {"type": "button", "action_id": f"{ACTION}_{index}", "value": f"{follow_up.pk}:{index}",
             "text": {"type": "plain_text", "text": step[:75], "emoji": True}}
            for index, step in enumerate(follow_up.steps)]},
    ]
    text = HEADLINE + " " + " · ".join(follow_up.steps)  # the notification fallback
    kwargs: dict[str, Any] = {"channel": chat_id, "text": text, "blocks": blocks}
    if thread:
        kwargs["thread_ts"] = thread
    try:
        ref = str(client_for(bot)._call("chat.postMessage", **kwargs).get("ts") or "")  # type: ignore[attr-defined]
    except PlatformError as exc:
        logger.info("bot %s: the follow-ups of message %s were not posted (%s)", bot.pk, follow_up.message_id, exc)
        return "failed"
    FollowUp.objects.filter(pk=follow_up.pk).update(delivered_to={
        "platform": bot.platform, "bot_id": str(bot.pk), "chat_id": chat_id, "thread": thread, "message_ref": ref})
    return "posted"


def is_slack_click(payload: dict[str, Any]) -> bool:
    return payload.get("type") == "block_actions" and any(
        isinstance(a, dict) and str(a.get("action_id") or "").startswith(ACTION) for a in payload.get("actions") or [])


def slack_click(bot: Any, payload: dict[str, Any]) -> str:
    """A verified block_actions payload on a follow-up button → the step's text as a new message from the
    clicker, in the same thread. A button that is not ours, of another organization's answer or moved to another
    message is ignored."""
    from channelbots import router
    from channelbots.incoming import Incoming
    from channelbots.models import ChannelSession

    action = next(a for a in payload["actions"] if str(a.get("action_id") or "").startswith(ACTION))
    pk, _, index = str(action.get("value") or "").partition(":")
    container, user = payload.get("container") or {}, payload.get("user") or {}
    chat_id = str((payload.get("channel") or {}).get("id") or container.get("channel_id") or "")
    message_ref = str(container.get("message_ts") or (payload.get("message") or {}).get("ts") or "")
    follow_up = (FollowUp.objects.filter(pk=int(pk), organization_id=bot.organization_id).first()
                 if pk.isdigit() else None)
    sent = (follow_up.delivered_to or {}) if follow_up is not None else {}
    if (follow_up is None or not index.isdigit() or int(index) >= len(follow_up.steps)
            or sent.get("bot_id") != str(bot.pk) or sent.get("chat_id") != chat_id
            or sent.get("message_ref") != message_ref):
        logger.info("bot %s: a follow-up click named no follow-up of this message", bot.pk)
        return "ignored"
    session = ChannelSession.objects.filter(bot=bot, conversation_id=follow_up.conversation_id).first()
    incoming = Incoming(
        platform=bot.platform, bot_id=str(bot.pk), chat_id=chat_id,
        chat_type=session.chat_type if session else "channel", sender_id=str(user.get("id") or ""),
        text=follow_up.steps[int(index)], sender_name=str(user.get("name") or user.get("username") or ""),
        # One click is one message: a redelivered interaction is the same claim.
        message_id=f"follow_up:{message_ref}:{index}:{user.get('id')}:{action.get('action_ts') or ''}",
        thread_key=session.thread_key if session else sent.get("thread", ""), reply_to=sent.get("thread", ""),
        mentioned=True, in_existing_thread=True,
        workspace=str((payload.get("team") or {}).get("id") or user.get("team_id") or ""), via="follow_up")
    router.accept(incoming)
    return "sent"
