"""The one interface the router and delivery talk to; each adapter package implements it.

A client holds the bot's revealed credential in memory for one unit of work and never logs it.
"""

from __future__ import annotations

import hashlib
import hmac
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from channelbots.incoming import IncomingFile
    from channelbots.models import ChannelBot


class PlatformError(Exception):
    """The platform refused or could not be reached. The message never carries a credential."""


class CredentialRejected(PlatformError):
    """The platform said the credential is wrong (or it is missing): retrying cannot help."""


# The largest file this platform posts into a chat (files out, send_channel_file): under every platform's own
# limit, so a refusal is ours and can be explained instead of arriving as an opaque API error.
MAX_CHAT_FILE_BYTES = 8 * 1024 * 1024


@dataclass
class Identity:
    user_id: str
    username: str = ""


@dataclass
class ChannelInfo:
    name: str = ""
    purpose: str = ""
    topic: str = ""
    member_count: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Download:
    data: bytes
    content_type: str


@dataclass
class Card:
    """A parked call shown in a thread: the tool and its arguments as the Approvals page shows them, Approve /
    Reject while it waits, and who decided where once it is decided (`outcome`)."""

    bot_id: str
    approval_id: str
    tool_name: str
    args_text: str
    console_url: str
    outcome: str = ""  # "" = still waiting; else "Approved by Ada in the console"

    @property
    def pending(self) -> bool:
        return not self.outcome

    def headline(self) -> str:
        if self.pending:
            return f"A step needs a person's decision before I go on: {self.tool_name}"
        return f"{self.outcome}: {self.tool_name}"

    def shown_args(self, limit: int = 3000) -> str:
        if len(self.args_text) <= limit:
            return self.args_text
        return self.args_text[:limit] + "\n… (cut here; the console shows all of it)"

    def plain(self) -> str:
        """The card as plain text (Telegram, and every platform's notification fallback)."""
        lines = [self.headline(), "", self.shown_args()]
        if self.pending:
            lines += ["", f"Decide with the buttons, or in the console: {self.console_url}"]
        return "\n".join(lines)


APPROVE, REJECT = "approve", "reject"


def action_signature(token: str, bot_id: str, approval_id: str, decision: str) -> str:
    """What a decision button carries so a click names only a decision this deployment offered: an HMAC keyed by
    a key derived from the bot's own token (nobody but this deployment and the platform holds it)."""
    key = hmac.new(token.encode(), b"agenticos:approval-action", hashlib.sha256).digest()
    return hmac.new(key, f"{bot_id}:{approval_id}:{decision}".encode(), hashlib.sha256).hexdigest()


class PlatformClient(ABC):
    platform: str = ""
    can_edit: bool = True
    # The longest message the platform takes, in characters: a longer answer is split (delivery.split_text).
    max_text: int = 4000
    # channel_tools this platform can answer (Telegram: info + admins only).
    channel_tools: tuple[str, ...] = (
        "get_channel_info",
        "list_channel_members",
        "search_channels",
        "read_channel_history",
        "send_channel_file",
    )

    def __init__(self, bot: ChannelBot, credentials: dict[str, str]):
        self.bot = bot
        self.credentials = credentials

    @property
    def token(self) -> str:
        token = self.credentials.get("token") or ""
        if not token:
            raise CredentialRejected("The bot has no token.")
        return token

    @abstractmethod
    def identity(self) -> Identity: ...

    @abstractmethod
    def post(self, chat_id: str, text: str, *, reply_to: str = "") -> str:
        """Post a message; returns the platform's reference to it (for edits)."""

    def edit(self, chat_id: str, ref: str, text: str) -> None:
        raise PlatformError("This platform cannot edit a sent message.")

    def post_card(self, chat_id: str, card: Card, *, reply_to: str = "") -> str:
        """Post a parked call with Approve / Reject buttons; returns the message's reference."""
        return self.post(chat_id, card.plain(), reply_to=reply_to)

    def update_card(self, chat_id: str, ref: str, card: Card) -> None:
        """Rewrite a card once decided: the outcome instead of the buttons."""
        self.edit(chat_id, ref, card.plain())

    def sign(self, approval_id: str, decision: str) -> str:
        return action_signature(self.token, str(self.bot.pk), approval_id, decision)

    def signature_ok(self, approval_id: str, decision: str, given: str, *, length: int = 64) -> bool:
        expected = self.sign(approval_id, decision)[:length]
        return bool(given) and hmac.compare_digest(expected.encode(), str(given).encode())

    @abstractmethod
    def is_member(self, chat_id: str, user_id: str) -> bool: ...

    def channel_info(self, chat_id: str) -> ChannelInfo:
        raise PlatformError("Not available on this platform.")

    def members(self, chat_id: str, limit: int = 100) -> list[str]:
        raise PlatformError("Not available on this platform.")

    def search_channels(self, query: str, limit: int = 20) -> list[dict[str, str]]:
        raise PlatformError("Not available on this platform.")

    def history(self, chat_id: str, limit: int = 50) -> list[dict[str, Any]]:
        raise PlatformError("Not available on this platform.")

    def thread_history(self, chat_id: str, thread: str, limit: int = 50) -> list[dict[str, Any]]:
        """Earlier messages of a thread, oldest first: [{speaker, text, files: [IncomingFile]}]."""
        return []

    @abstractmethod
    def download(self, file: IncomingFile, max_bytes: int) -> Download: ...

    def upload(self, chat_id: str, name: str, data: bytes, mime: str, *, reply_to: str = "") -> None:
        raise PlatformError("This platform cannot receive files from the bot.")


def client_for(bot: ChannelBot, credentials: dict[str, str] | None = None) -> PlatformClient:
    from channelbots import services

    creds = credentials if credentials is not None else services.reveal_credentials(bot)
    if bot.platform == "slack":
        from channelbots.slack.client import SlackClient

        return SlackClient(bot, creds)
    if bot.platform == "telegram":
        from channelbots.telegram.client import TelegramClient

        return TelegramClient(bot, creds)
    from channelbots.mattermost.client import MattermostClient

    return MattermostClient(bot, creds)
