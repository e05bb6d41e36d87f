"""Telegram Bot API over HTTPS (base URL overridable: a self-hosted Bot API server, a proxy, the test fake).

The token is part of every URL, so no URL is ever logged here and errors are reworded without it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx2

from agenticos import netguard
from channelbots.incoming import IncomingFile
from channelbots.platforms import (
    APPROVE,
    REJECT,
    Card,
    ChannelInfo,
    CredentialRejected,
    Download,
    Identity,
    PlatformClient,
    PlatformError,
)

DEFAULT_BASE_URL = "https://api.telegram.org"
_TOKEN_IN_URL = re.compile(r"/(file/)?bot[^/\s]+/")


class _RedactBotTokens(logging.Filter):
    """httpx logs every request URL at INFO, and a Telegram URL carries the bot token."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.msg = record.getMessage()
            record.args = ()
        record.msg = _TOKEN_IN_URL.sub(lambda m: f"/{m.group(1) or ''}bot<redacted>/", str(record.msg))
        return True


logging.getLogger("httpx").addFilter(_RedactBotTokens())
logging.getLogger("httpx2").addFilter(_RedactBotTokens())
MAX_TEXT = 4096
# callback_data holds at most 64 bytes: "ap:<approval hex>:<a|r>:<signature, 16 hex>" is 54.
CALLBACK_PREFIX = "ap"
CALLBACK_SIGNATURE = 16
DECISION_CODES = {APPROVE: "a", REJECT: "r"}
# What the bot asks Telegram for: messages, and the clicks on its cards' buttons.
# message_reaction: a 👍/👎 on an answer is feedback on its run (channelbots/reactions.py). Telegram sends it only when
# asked for by name, and in a group only to a bot that is an administrator there.
ALLOWED_UPDATES = ["message", "callback_query", "message_reaction"]


def callback_data(client: PlatformClient, approval_id: str, decision: str) -> str:
    hex_id = approval_id.replace("-", "")
    return (f"{CALLBACK_PREFIX}:{hex_id}:{DECISION_CODES[decision]}:"
            f"{client.sign(hex_id, decision)[:CALLBACK_SIGNATURE]}")


def read_callback_data(data: str) -> tuple[str, str, str] | None:
    """(approval hex, decision, signature) of a card button's data, or None for anything else."""
    parts = str(data or "").split(":")
    if len(parts) != 4 or parts[0] != CALLBACK_PREFIX:
        return None
    decision = {code: name for name, code in DECISION_CODES.items()}.get(parts[2])
    if decision is None or len(parts[1]) != 32:
        return None
    return parts[1], decision, parts[3]


class TelegramClient(PlatformClient):
    platform = "telegram"
    channel_tools = ("get_channel_info", "list_channel_members")
    max_text = MAX_TEXT

    @property
    def base(self) -> str:
        return (self.bot.api_base_url or DEFAULT_BASE_URL).rstrip("/")

    def _send(self, http_method: str, path: str, *, timeout: float, what: str, **kwargs: Any) -> httpx2.Response:
        """One request through the outbound guard: the server's address is checked (and pinned) on every call,
        not only when the bot was saved. `path` carries the token: never in a message."""
        base = self.base
        try:
            with netguard.pinned_sync_client(allowance=netguard.CHANNEL_HOSTS, home=base, timeout=timeout) as client:
                return client.request(http_method, base + path, **kwargs)
        except netguard.Refused as exc:
            raise PlatformError(f"The Telegram server's address was refused: {exc}") from None
        except httpx2.HTTPError as exc:
            raise PlatformError(f"{what} ({type(exc).__name__}).") from None

    def call(self, method: str, http_timeout: float = 15, **params: Any) -> Any:
        response = self._send("POST", f"/bot{self.token}/{method}", json=params, timeout=http_timeout,
                              what="Telegram could not be reached")
        try:
            data = response.json()
        except ValueError:
            raise PlatformError(f"Telegram answered {response.status_code} to {method}.") from None
        if response.status_code in (401, 404) and method in ("getMe", "getUpdates", "setWebhook"):
            raise CredentialRejected("Telegram rejected the bot token.")
        if not data.get("ok"):
            if response.status_code == 401:
                raise CredentialRejected("Telegram rejected the bot token.")
            raise PlatformError(f"Telegram refused {method}: {str(data.get('description') or '')[:200]}")
        return data.get("result")

    def identity(self) -> Identity:
        me = self.call("getMe") or {}
        return Identity(user_id=str(me.get("id") or ""), username=str(me.get("username") or ""))

    def post(self, chat_id: str, text: str, *, reply_to: str = "") -> str:
        params: dict[str, Any] = {"chat_id": chat_id, "text": text[:MAX_TEXT]}
        if reply_to:
            params["reply_parameters"] = {"message_id": int(reply_to), "allow_sending_without_reply": True}
        result = self.call("sendMessage", **params) or {}
        return str(result.get("message_id") or "")

    def edit(self, chat_id: str, ref: str, text: str) -> None:
        try:
            self.call("editMessageText", chat_id=chat_id, message_id=int(ref), text=text[:MAX_TEXT])
        except PlatformError as exc:
            if "not modified" not in str(exc):
                raise

    def post_card(self, chat_id: str, card: Card, *, reply_to: str = "") -> str:
        params: dict[str, Any] = {"chat_id": chat_id, "text": card.plain()[:MAX_TEXT], "reply_markup": {
            "inline_keyboard": [[
                {"text": "Approve", "callback_data": callback_data(self, card.approval_id, APPROVE)},
                {"text": "Reject", "callback_data": callback_data(self, card.approval_id, REJECT)},
            ]]}}
        if reply_to:
            params["reply_parameters"] = {"message_id": int(reply_to), "allow_sending_without_reply": True}
        result = self.call("sendMessage", **params) or {}
        return str(result.get("message_id") or "")

    def update_card(self, chat_id: str, ref: str, card: Card) -> None:
        # An empty keyboard takes the buttons away: a decided card offers nothing more to click.
        try:
            self.call("editMessageText", chat_id=chat_id, message_id=int(ref), text=card.plain()[:MAX_TEXT],
                      reply_markup={"inline_keyboard": []})
        except PlatformError as exc:
            if "not modified" not in str(exc):
                raise

    def answer_callback(self, callback_id: str, text: str, *, alert: bool = False) -> None:
        """Every callback_query is answered (the client shows a spinner until then); `text` is what the clicker
        reads, as an alert when the click changed nothing."""
        self.call("answerCallbackQuery", callback_query_id=callback_id, text=text[:200], show_alert=alert)

    def is_member(self, chat_id: str, user_id: str) -> bool:
        member = self.call("getChatMember", chat_id=chat_id, user_id=int(user_id)) or {}
        return member.get("status") in ("creator", "administrator", "member", "restricted")

    def channel_info(self, chat_id: str) -> ChannelInfo:
        chat = self.call("getChat", chat_id=chat_id) or {}
        try:
            count = self.call("getChatMemberCount", chat_id=chat_id)
        except PlatformError:
            count = None
        return ChannelInfo(name=str(chat.get("title") or chat.get("username") or ""),
                           purpose=str(chat.get("description") or ""), topic="", member_count=count)

    def members(self, chat_id: str, limit: int = 100) -> list[str]:
        """Telegram lists administrators only; the rest of a group is not enumerable by a bot."""
        admins = self.call("getChatAdministrators", chat_id=chat_id) or []
        out = []
        for admin in admins[:limit]:
            user = admin.get("user") or {}
            out.append(" ".join(p for p in (user.get("first_name"), user.get("last_name")) if p)
                       or str(user.get("username") or user.get("id")))
        return out

    def download(self, file: IncomingFile, max_bytes: int) -> Download:
        info = self.call("getFile", file_id=file.ref) or {}
        size = info.get("file_size")
        if isinstance(size, int) and size > max_bytes:
            raise PlatformError("The file is larger than the limit.")
        path = info.get("file_path")
        if not path:
            raise PlatformError("Telegram did not say where the file is.")
        response = self._send("GET", f"/file/bot{self.token}/{path}", timeout=30,
                              what="The file could not be downloaded")
        if response.status_code != 200:
            raise PlatformError(f"Telegram answered {response.status_code} for a file.")
        if len(response.content) > max_bytes:
            raise PlatformError("The file is larger than the limit.")
        return Download(response.content, response.headers.get("content-type", "").split(";")[0].strip().lower())

    def upload(self, chat_id: str, name: str, data: bytes, mime: str, *, reply_to: str = "") -> None:
        method, field = ("sendPhoto", "photo") if mime.startswith("image/") else ("sendDocument", "document")
        form: dict[str, Any] = {"chat_id": chat_id}
        if reply_to:
            form["reply_to_message_id"] = reply_to
        response = self._send("POST", f"/bot{self.token}/{method}", data=form, files={field: (name, data, mime)},
                              timeout=60, what="Telegram could not be reached")
        if response.status_code != 200:
            raise PlatformError(f"Telegram answered {response.status_code} to {method}.")

    def set_webhook(self, url: str, secret: str) -> None:
        self.call("setWebhook", url=url, secret_token=secret, allowed_updates=ALLOWED_UPDATES)

    def delete_webhook(self) -> None:
        self.call("deleteWebhook")

    def get_updates(self, offset: int | None, timeout: int = 25) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"timeout": timeout, "allowed_updates": ALLOWED_UPDATES}
        if offset is not None:
            params["offset"] = offset
        return self.call("getUpdates", http_timeout=timeout + 10, **params) or []
