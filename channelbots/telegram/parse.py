"""Telegram update → Incoming. Voice notes, photos (largest size) and documents are parsed."""

from __future__ import annotations

from typing import Any

from channelbots.incoming import CHANNEL, DM, Incoming, IncomingFile


def _mentions_bot(message: dict[str, Any], text: str, bot_username: str, bot_user_id: str) -> bool:
    reply = message.get("reply_to_message") or {}
    if bot_user_id and str((reply.get("from") or {}).get("id") or "") == bot_user_id:
        return True
    if not bot_username:
        return False
    handle = "@" + bot_username.lower()
    for entity in (message.get("entities") or []) + (message.get("caption_entities") or []):
        chunk = text[entity.get("offset", 0): entity.get("offset", 0) + entity.get("length", 0)].lower()
        if entity.get("type") == "mention" and chunk == handle:
            return True
        if entity.get("type") == "bot_command" and chunk.endswith(handle):
            return True
    return False


def files_of(message: dict[str, Any]) -> list[IncomingFile]:
    files: list[IncomingFile] = []
    voice = message.get("voice") or message.get("audio")
    if voice:
        files.append(IncomingFile(ref=str(voice["file_id"]), name="voice.ogg" if message.get("voice") else
                                  str(voice.get("file_name") or "audio"),
                                  mime=str(voice.get("mime_type") or "audio/ogg"), size=voice.get("file_size"),
                                  is_voice=True))
    photos = message.get("photo") or []
    if photos:
        largest = max(photos, key=lambda p: (p.get("width", 0) * p.get("height", 0), p.get("file_size") or 0))
        files.append(IncomingFile(ref=str(largest["file_id"]), name="photo.jpg", mime="image/jpeg",
                                  size=largest.get("file_size")))
    document = message.get("document")
    if document:
        files.append(IncomingFile(ref=str(document["file_id"]), name=str(document.get("file_name") or "document"),
                                  mime=str(document.get("mime_type") or ""), size=document.get("file_size")))
    return files


def parse_incoming(update: dict[str, Any], *, bot_id: str, bot_username: str = "", bot_user_id: str = "",
                   via: str = "webhook") -> Incoming | None:
    message = update.get("message")
    if not isinstance(message, dict):
        return None  # edited_message, channel_post, my_chat_member, … describe the chat
    sender = message.get("from") or {}
    if not sender or sender.get("is_bot"):
        return None
    chat = message.get("chat") or {}
    text = str(message.get("text") or message.get("caption") or "")
    files = files_of(message)
    if not text and not files:
        return None  # joins, pins, title changes
    chat_type = DM if chat.get("type") == "private" else CHANNEL
    thread = str(message.get("message_thread_id") or "") if message.get("is_topic_message") else ""
    name = " ".join(p for p in (sender.get("first_name"), sender.get("last_name")) if p) or sender.get("username") or ""
    return Incoming(
        platform="telegram",
        bot_id=bot_id,
        chat_id=str(chat.get("id")),
        chat_type=chat_type,
        sender_id=str(sender.get("id")),
        sender_name=str(name),
        text=text,
        message_id=str(message.get("message_id")) if message.get("message_id") is not None else None,
        thread_key=thread,
        reply_to=str(message.get("message_id") or ""),
        mentioned=_mentions_bot(message, text, bot_username, bot_user_id),
        files=files,
        via=via,
    )


def strip_mentions(text: str, bot_username: str) -> str:
    if bot_username:
        import re

        text = re.sub(rf"@{re.escape(bot_username)}\b", "", text, flags=re.IGNORECASE)
    return " ".join(text.split())


def parse_callback(update: dict[str, Any], *, bot_id: str):
    """A callback_query on one of our cards' buttons → (Click, callback id, signature), or None. The Click is
    unsigned: the caller checks the signature with the bot's client."""
    from channelbots.incoming import Click
    from channelbots.telegram.client import read_callback_data

    query = update.get("callback_query")
    if not isinstance(query, dict):
        return None
    read = read_callback_data(str(query.get("data") or ""))
    sender = query.get("from") or {}
    message = query.get("message") or {}
    if read is None or not sender or sender.get("is_bot"):
        return None
    hex_id, decision, signature = read
    name = " ".join(p for p in (sender.get("first_name"), sender.get("last_name")) if p) or sender.get("username") or ""
    click = Click(
        platform="telegram",
        bot_id=bot_id,
        approval_id=hex_id,
        decision=decision,
        account_id=str(sender.get("id")),
        display_name=str(name),
        chat_id=str((message.get("chat") or {}).get("id") or ""),
        message_ref=str(message.get("message_id") or ""),
    )
    return click, str(query.get("id") or ""), signature
