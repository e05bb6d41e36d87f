"""Slack Web API through slack-sdk's WebClient (base_url overridable: a proxy, or the test fake)."""

from __future__ import annotations

from typing import Any

import httpx2
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

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

# Block Kit action ids of a card's buttons (the interactions route reads them back).
APPROVE_ACTION, REJECT_ACTION = "agenticos_approve", "agenticos_reject"
# A section block's text holds at most 3,000 characters.
SECTION_MAX = 2900
DEFAULT_BASE_URL = "https://slack.com/api/"
REJECTED = {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "no_permission"}


def base_url_for(bot) -> str:
    """The Web API base, its address checked by the outbound guard (slack-sdk's urllib client cannot take a
    pinned transport, so the check runs before every call instead). Raises PlatformError when refused."""
    base = (bot.api_base_url or DEFAULT_BASE_URL).rstrip("/") + "/"
    try:
        netguard.check_url_blocking(base, allowance=netguard.CHANNEL_HOSTS)
    except netguard.Refused as exc:
        raise PlatformError(f"The Slack API address was refused: {exc}") from None
    return base


def file_from_event(f: dict[str, Any]) -> IncomingFile:
    mime = f.get("mimetype") or ""
    return IncomingFile(
        ref=f.get("url_private_download") or f.get("url_private") or "",
        name=f.get("name") or f.get("title") or "file",
        mime=mime,
        size=f.get("size"),
        is_voice=mime.startswith("audio/") or f.get("subtype") == "slack_audio",
    )


def escape(text: str) -> str:
    """Slack mrkdwn: &, < and > are control characters (a literal one must be an entity)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def card_blocks(card: Card) -> list[dict[str, Any]]:
    args = card.shown_args(SECTION_MAX - 300)
    blocks: list[dict[str, Any]] = [{
        "type": "section",
        "text": {"type": "mrkdwn", "text": f"*{escape(card.headline())}*\n```{escape(args)}```"},
    }]
    if card.pending:
        blocks.append({"type": "actions", "block_id": "agenticos_approval", "elements": [
            {"type": "button", "action_id": APPROVE_ACTION, "style": "primary", "value": f"{card.approval_id}:{APPROVE}",
             "text": {"type": "plain_text", "text": "Approve"}},
            {"type": "button", "action_id": REJECT_ACTION, "style": "danger", "value": f"{card.approval_id}:{REJECT}",
             "text": {"type": "plain_text", "text": "Reject"}},
        ]})
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": f"Or decide in the console: <{card.console_url}|open the run>"}]})
    return blocks


class SlackClient(PlatformClient):
    platform = "slack"
    # Slack cuts a message at 40,000 characters and asks clients to keep one under 4,000 to stay readable.
    max_text = 4000

    def __init__(self, bot, credentials):
        super().__init__(bot, credentials)
        self._web: WebClient | None = None

    @property
    def web(self) -> WebClient:
        if self._web is None:
            self._web = WebClient(token=self.token, base_url=base_url_for(self.bot), timeout=15)
        return self._web

    def _call(self, method: str, **kwargs) -> dict[str, Any]:
        base_url_for(self.bot)  # checked again on every call: the address may resolve elsewhere since the save
        try:
            response = self.web.api_call(method, params=kwargs) if method.startswith(
                ("conversations.", "users.")) else self.web.api_call(method, json=kwargs)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "error")
            if error in REJECTED:
                raise CredentialRejected(f"Slack rejected the bot token ({error}).") from None
            raise PlatformError(f"Slack answered {error} to {method}.") from None
        except SlackClientError as exc:
            raise PlatformError(f"Slack could not be reached ({type(exc).__name__}).") from None
        except OSError as exc:
            raise PlatformError(f"Slack could not be reached ({type(exc).__name__}).") from None
        return dict(response.data) if isinstance(response.data, dict) else {}

    def identity(self) -> Identity:
        data = self._call("auth.test")
        return Identity(user_id=str(data.get("user_id") or ""), username=str(data.get("user") or ""))

    def post(self, chat_id: str, text: str, *, reply_to: str = "") -> str:
        kwargs: dict[str, Any] = {"channel": chat_id, "text": text}
        if reply_to:
            kwargs["thread_ts"] = reply_to
        return str(self._call("chat.postMessage", **kwargs).get("ts") or "")

    def edit(self, chat_id: str, ref: str, text: str) -> None:
        self._call("chat.update", channel=chat_id, ts=ref, text=text)

    def post_card(self, chat_id: str, card: Card, *, reply_to: str = "") -> str:
        kwargs: dict[str, Any] = {"channel": chat_id, "text": card.plain(), "blocks": card_blocks(card)}
        if reply_to:
            kwargs["thread_ts"] = reply_to
        return str(self._call("chat.postMessage", **kwargs).get("ts") or "")

    def update_card(self, chat_id: str, ref: str, card: Card) -> None:
        self._call("chat.update", channel=chat_id, ts=ref, text=card.plain(), blocks=card_blocks(card))

    def post_ephemeral(self, chat_id: str, user_id: str, text: str, *, reply_to: str = "") -> None:
        """A message only `user_id` sees (why a click changed nothing)."""
        kwargs: dict[str, Any] = {"channel": chat_id, "user": user_id, "text": text}
        if reply_to:
            kwargs["thread_ts"] = reply_to
        self._call("chat.postEphemeral", **kwargs)

    def is_member(self, chat_id: str, user_id: str) -> bool:
        cursor = ""
        for _ in range(20):
            kwargs: dict[str, Any] = {"channel": chat_id, "limit": 200}
            if cursor:
                kwargs["cursor"] = cursor
            data = self._call("conversations.members", **kwargs)
            if user_id in (data.get("members") or []):
                return True
            cursor = (data.get("response_metadata") or {}).get("next_cursor") or ""
            if not cursor:
                return False
        return False

    def channel_info(self, chat_id: str) -> ChannelInfo:
        channel = self._call("conversations.info", channel=chat_id, include_num_members=True).get("channel") or {}
        return ChannelInfo(
            name=str(channel.get("name") or ""),
            purpose=str((channel.get("purpose") or {}).get("value") or ""),
            topic=str((channel.get("topic") or {}).get("value") or ""),
            member_count=channel.get("num_members"),
        )

    def _user_name(self, user_id: str, cache: dict[str, str]) -> str:
        if user_id not in cache:
            try:
                user = self._call("users.info", user=user_id).get("user") or {}
                profile = user.get("profile") or {}
                cache[user_id] = profile.get("display_name") or user.get("real_name") or user.get("name") or user_id
            except PlatformError:
                cache[user_id] = user_id
        return cache[user_id]

    def members(self, chat_id: str, limit: int = 100) -> list[str]:
        data = self._call("conversations.members", channel=chat_id, limit=min(limit, 200))
        cache: dict[str, str] = {}
        return [self._user_name(u, cache) for u in (data.get("members") or [])[:limit]]

    def search_channels(self, query: str, limit: int = 20) -> list[dict[str, str]]:
        data = self._call("conversations.list", limit=200, types="public_channel,private_channel")
        query = query.lower().strip()
        out = []
        for channel in data.get("channels") or []:
            name = str(channel.get("name") or "")
            if query in name.lower():
                out.append({"id": str(channel.get("id")), "name": name})
        return out[:limit]

    def _rows(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        cache: dict[str, str] = {}
        rows = []
        for m in messages:
            speaker = self._user_name(m["user"], cache) if m.get("user") else (m.get("username") or "bot")
            rows.append({
                "speaker": speaker,
                "text": str(m.get("text") or ""),
                "files": [file_from_event(f) for f in m.get("files") or []],
                "ts": m.get("ts"),
            })
        return rows

    def history(self, chat_id: str, limit: int = 50) -> list[dict[str, Any]]:
        data = self._call("conversations.history", channel=chat_id, limit=min(limit, 200))
        return list(reversed(self._rows(data.get("messages") or [])))

    def thread_history(self, chat_id: str, thread: str, limit: int = 50) -> list[dict[str, Any]]:
        data = self._call("conversations.replies", channel=chat_id, ts=thread, limit=min(limit + 1, 200))
        return self._rows(data.get("messages") or [])

    def thread_tail(self, chat_id: str, thread: str, limit: int = 50) -> list[dict[str, Any]]:
        """The newest `limit` messages of a thread, oldest first. conversations.replies pages from the thread's
        start, so the pages are walked (at most 10 × 200) and the tail kept."""
        messages: list[dict[str, Any]] = []
        cursor = ""
        for _ in range(10):
            kwargs: dict[str, Any] = {"channel": chat_id, "ts": thread, "limit": 200}
            if cursor:
                kwargs["cursor"] = cursor
            data = self._call("conversations.replies", **kwargs)
            messages += data.get("messages") or []
            messages = messages[-limit:]
            cursor = (data.get("response_metadata") or {}).get("next_cursor") or ""
            if not cursor or not data.get("has_more", True):
                break
        return self._rows(messages)

    def download(self, file: IncomingFile, max_bytes: int) -> Download:
        # The file's URL comes from the event: through the guard (pinned, every redirect hop checked, the token
        # dropped when a redirect leaves the file's origin).
        try:
            with netguard.pinned_sync_client(allowance=netguard.CHANNEL_HOSTS, home=file.ref, timeout=30,
                                             follow_redirects=True) as client, client.stream(
                "GET", file.ref, headers={"Authorization": f"Bearer {self.token}"}
            ) as response:
                if response.status_code != 200:
                    raise PlatformError(f"Slack answered {response.status_code} for a file.")
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if content_type == "text/html":
                    # Slack answers a missing files:read scope with 200 and its login page.
                    raise PlatformError("Slack sent its sign-in page instead of the file (is files:read granted?).")
                chunks, total = [], 0
                for chunk in response.iter_bytes():
                    total += len(chunk)
                    if total > max_bytes:
                        raise PlatformError("The file is larger than the limit.")
                    chunks.append(chunk)
        except netguard.Refused as exc:
            raise PlatformError(f"The file's address was refused: {exc}") from None
        except httpx2.HTTPError as exc:
            raise PlatformError(f"The file could not be downloaded ({type(exc).__name__}).") from None
        return Download(b"".join(chunks), content_type)

    def upload(self, chat_id: str, name: str, data: bytes, mime: str, *, reply_to: str = "") -> None:
        try:
            kwargs: dict[str, Any] = {"channel": chat_id, "filename": name, "content": data, "title": name}
            if reply_to:
                kwargs["thread_ts"] = reply_to
            self.web.files_upload_v2(**kwargs)
        except SlackApiError as exc:
            raise PlatformError(f"Slack answered {exc.response.get('error')} to a file upload.") from None
        except (SlackClientError, OSError) as exc:
            raise PlatformError(f"Slack could not be reached ({type(exc).__name__}).") from None
