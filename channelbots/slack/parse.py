"""Slack event → Incoming, or None when the event is the platform describing the channel rather than
someone speaking in it (edits, deletions, joins, topic changes, the bot's own posts)."""

from __future__ import annotations

import re
from typing import Any

from channelbots.incoming import CHANNEL, DM, GROUP_DM, Incoming
from channelbots.slack.client import file_from_event

# Subtypes that are someone speaking. Everything else (message_changed, message_deleted, channel_join,
# channel_topic, bot_message, …) is the platform describing the channel.
SPEAKING_SUBTYPES = {None, "", "file_share", "thread_broadcast"}
USER_MENTION_RE = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
CHAT_TYPES = {"im": DM, "mpim": GROUP_DM, "channel": CHANNEL, "group": CHANNEL}


def bot_user_id_of(payload: dict[str, Any], known: str = "") -> str:
    if known:
        return known
    for auth in payload.get("authorizations") or []:
        if auth.get("is_bot") and auth.get("user_id"):
            return str(auth["user_id"])
    return ""


def _chat_type(event: dict[str, Any]) -> str:
    channel_type = event.get("channel_type")
    if channel_type in CHAT_TYPES:
        return CHAT_TYPES[channel_type]
    channel = str(event.get("channel") or "")
    return DM if channel.startswith("D") else CHANNEL


def parse_incoming(payload: dict[str, Any], *, bot_id: str, bot_user_id: str = "", via: str = "events_api") -> Incoming | None:
    if payload.get("type") != "event_callback":
        return None
    event = payload.get("event") or {}
    kind = event.get("type")
    if kind not in ("message", "app_mention"):
        return None
    if event.get("subtype") not in SPEAKING_SUBTYPES:
        return None
    me = bot_user_id_of(payload, bot_user_id)
    sender = str(event.get("user") or "")
    if event.get("bot_id") or not sender or (me and sender == me):
        return None
    text = str(event.get("text") or "")
    ts = str(event.get("ts") or "")
    thread_ts = str(event.get("thread_ts") or "")
    mentioned = kind == "app_mention" or (bool(me) and me in USER_MENTION_RE.findall(text))
    files = [file_from_event(f) for f in event.get("files") or [] if isinstance(f, dict)]
    return Incoming(
        platform="slack",
        bot_id=bot_id,
        chat_id=str(event.get("channel") or ""),
        chat_type=_chat_type(event),
        sender_id=sender,
        text=text,
        message_id=ts or None,
        # The first message is keyed by the thread its reply will open: its own ts.
        thread_key=thread_ts or ts,
        reply_to=thread_ts or ts,
        mentioned=mentioned,
        in_existing_thread=bool(thread_ts) and thread_ts != ts,
        workspace=str(payload.get("team_id") or event.get("team") or ""),
        files=files,
        via=via,
    )


def strip_mentions(text: str, bot_user_id: str) -> str:
    """The recorded prompt: the bot's own handle removed, other people's left as they are."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text)
    return " ".join(text.split())


def parse_click(payload: dict[str, Any], *, bot_id: str):
    """A block_actions payload on one of our cards' buttons → Click (unsigned: the route knows whether the request
    signature held), or None for any other interaction."""
    from channelbots.incoming import Click
    from channelbots.platforms import APPROVE, REJECT
    from channelbots.slack.client import APPROVE_ACTION, REJECT_ACTION

    if payload.get("type") != "block_actions":
        return None
    action = next((a for a in payload.get("actions") or [] if isinstance(a, dict)
                   and a.get("action_id") in (APPROVE_ACTION, REJECT_ACTION)), None)
    if action is None:
        return None
    approval_id, _, decision = str(action.get("value") or "").partition(":")
    expected = APPROVE if action.get("action_id") == APPROVE_ACTION else REJECT
    if decision != expected:
        return None
    container = payload.get("container") or {}
    message = payload.get("message") or {}
    user = payload.get("user") or {}
    return Click(
        platform="slack",
        bot_id=bot_id,
        approval_id=approval_id,
        decision=decision,
        account_id=str(user.get("id") or ""),
        display_name=str(user.get("name") or user.get("username") or ""),
        workspace=str((payload.get("team") or {}).get("id") or user.get("team_id") or ""),
        chat_id=str((payload.get("channel") or {}).get("id") or container.get("channel_id") or ""),
        message_ref=str(container.get("message_ts") or message.get("ts") or ""),
        thread=str(message.get("thread_ts") or ""),
    )
