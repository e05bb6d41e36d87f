"""What every adapter's `parse_incoming` produces: one platform-neutral turn, or nothing.

It travels as JSON (webhook route → Celery task), so it holds plain values only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

DM = "dm"
GROUP_DM = "group_dm"
CHANNEL = "channel"


@dataclass
class IncomingFile:
    """A file the platform offers: `ref` is what its adapter needs to download it (URL or file id)."""

    ref: str
    name: str = ""
    mime: str = ""
    # What the platform claims (checked before download; the bytes are checked after).
    size: int | None = None
    is_voice: bool = False


@dataclass
class Incoming:
    platform: str
    bot_id: str
    chat_id: str
    chat_type: str  # dm | group_dm | channel
    sender_id: str
    text: str = ""
    sender_name: str = ""
    # The platform's id of this message within its chat (None = no dedup possible).
    message_id: str | None = None
    # The conversation key inside the chat: the thread the answer belongs to.
    thread_key: str = ""
    # Where the answer goes (Slack thread_ts / Mattermost root_id / Telegram reply_to); "" = top level.
    reply_to: str = ""
    # The platform said the bot was named (Slack <@U…>, Mattermost mention list, Telegram @bot / reply).
    mentioned: bool = False
    # True when the message joins a thread that existed before it (mid-thread context may be read).
    in_existing_thread: bool = False
    workspace: str = ""  # Slack team id, Mattermost server, Telegram ""
    files: list[IncomingFile] = field(default_factory=list)
    # Entry path, for logs: "events_api", "socket_mode", "webhook", "polling", "stream", "outgoing_webhook".
    via: str = ""
    # Mattermost outgoing webhooks fire on a trigger word: that is what addressed the bot there.
    trigger_word: str = ""
    # Headers such as x-slack-retry-num: logged, never trusted.
    retry_note: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Incoming:
        data = dict(data)
        data["files"] = [IncomingFile(**f) for f in data.get("files") or []]
        return cls(**data)

    @property
    def account_label(self) -> str:
        return f"{self.platform}:{self.sender_id}"


@dataclass
class Click:
    """A person pressed Approve or Reject on a card. Every field is what the platform said, and `signed` is
    whether the button's own data carried this deployment's signature (Slack: the request signature covers
    it, so the route sets it)."""

    platform: str
    bot_id: str
    approval_id: str
    decision: str  # approve | reject
    account_id: str  # who clicked (the platform's id)
    chat_id: str
    message_ref: str  # the message the button sits on
    workspace: str = ""
    display_name: str = ""
    thread: str = ""
    signed: bool = False
