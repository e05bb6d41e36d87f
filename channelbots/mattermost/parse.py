"""Mattermost → Incoming, from the WebSocket `posted` event or the outgoing webhook body."""

from __future__ import annotations

import json
from typing import Any

from channelbots.incoming import CHANNEL, DM, GROUP_DM, Incoming, IncomingFile

CHAT_TYPES = {"D": DM, "G": GROUP_DM, "O": CHANNEL, "P": CHANNEL}


def _json(value: Any, default: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return default
    return value if value is not None else default


def parse_event(event: dict[str, Any], *, bot_id: str, bot_user_id: str = "", server: str = "") -> Incoming | None:
    """A WebSocket event. Mentions come from the event's own list, read against the bot's account
    (resolved once per session); when it could not be resolved, everything is treated as addressed."""
    if event.get("event") != "posted":
        return None
    data = event.get("data") or {}
    post = _json(data.get("post"), {})
    if not isinstance(post, dict) or post.get("type"):  # system_join_channel, system_header_change, …
        return None
    sender = str(post.get("user_id") or "")
    props = post.get("props") or {}
    if not sender or (bot_user_id and sender == bot_user_id) or props.get("from_bot") in ("true", True):
        return None
    mentions = _json(data.get("mentions"), []) or []
    root = str(post.get("root_id") or "")
    post_id = str(post.get("id") or "")
    return Incoming(
        platform="mattermost",
        bot_id=bot_id,
        chat_id=str(post.get("channel_id") or ""),
        chat_type=CHAT_TYPES.get(str(data.get("channel_type") or "O"), CHANNEL),
        sender_id=sender,
        sender_name=str(data.get("sender_name") or "").lstrip("@"),
        text=str(post.get("message") or ""),
        message_id=post_id or None,
        thread_key=root or post_id,
        reply_to=root or post_id,
        mentioned=(bot_user_id in mentions) if bot_user_id else True,
        in_existing_thread=bool(root),
        workspace=server,
        files=[IncomingFile(ref=str(f)) for f in post.get("file_ids") or []],
        via="stream",
    )


def parse_outgoing_webhook(body: dict[str, Any], *, bot_id: str, server: str = "") -> Incoming | None:
    sender = str(body.get("user_id") or "")
    post_id = str(body.get("post_id") or "")
    if not sender or not post_id:
        return None
    file_ids = body.get("file_ids") or ""
    if isinstance(file_ids, str):
        file_ids = [f for f in file_ids.split(",") if f]
    trigger = str(body.get("trigger_word") or "")
    return Incoming(
        platform="mattermost",
        bot_id=bot_id,
        chat_id=str(body.get("channel_id") or ""),
        chat_type=CHANNEL,
        sender_id=sender,
        sender_name=str(body.get("user_name") or ""),
        text=str(body.get("text") or ""),
        message_id=post_id,
        thread_key=post_id,
        reply_to=post_id,
        mentioned=bool(trigger),
        trigger_word=trigger,
        workspace=server,
        files=[IncomingFile(ref=str(f)) for f in file_ids],
        via="outgoing_webhook",
    )


def strip_trigger(text: str, trigger: str, bot_username: str = "") -> str:
    if trigger and text.startswith(trigger):
        text = text[len(trigger):]
    if bot_username:
        text = text.replace(f"@{bot_username}", "")
    return " ".join(text.split())


def parse_action(body: dict[str, Any], *, bot_id: str, server: str = ""):
    """The integration request Mattermost sends when a card's button is clicked → (Click, signature), or None.
    The context is what the card was posted with (kept server-side by Mattermost and sent back verbatim)."""
    from channelbots.incoming import Click
    from channelbots.platforms import APPROVE, REJECT

    context = body.get("context") or {}
    if not isinstance(context, dict):
        return None
    decision = str(context.get("decision") or "")
    if decision not in (APPROVE, REJECT) or not body.get("user_id") or not body.get("post_id"):
        return None
    click = Click(
        platform="mattermost",
        bot_id=bot_id,
        approval_id=str(context.get("approval_id") or ""),
        decision=decision,
        account_id=str(body.get("user_id")),
        display_name=str(body.get("user_name") or ""),
        workspace=server,
        chat_id=str(body.get("channel_id") or ""),
        message_ref=str(body.get("post_id")),
    )
    return click, str(context.get("signature") or "")
