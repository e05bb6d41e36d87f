"""Mattermost REST API v4 (the server URL is the bot's; there is no default)."""

from __future__ import annotations

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


def actions_url(bot) -> str:
    """Where the Mattermost server posts a click on a card's button (the integration URL)."""
    from django.conf import settings

    return f"{settings.FRONTEND_URL.rstrip('/')}/api/v1/mattermost/{bot.pk}/actions"


class MattermostClient(PlatformClient):
    platform = "mattermost"
    # A post holds at most 16,383 characters (Mattermost's MaxPostSize on current servers).
    max_text = 16383

    def card_props(self, card: Card) -> dict[str, Any]:
        attachment: dict[str, Any] = {"text": f"```json\n{card.shown_args(8000)}\n```"}
        if card.pending:
            attachment["text"] += f"\n[Or decide in the console]({card.console_url})"
            # Mattermost keeps an action's integration (URL and context) on the server and sends the context
            # back verbatim on a click; the signature in it says the decision is one this deployment offered.
            attachment["actions"] = [
                {"id": decision, "name": label, "style": style, "integration": {
                    "url": actions_url(self.bot),
                    "context": {"approval_id": card.approval_id, "decision": decision,
                                "signature": self.sign(card.approval_id, decision)}}}
                for decision, label, style in ((APPROVE, "Approve", "primary"), (REJECT, "Reject", "danger"))
            ]
        return {"attachments": [attachment]}

    def post_card(self, chat_id: str, card: Card, *, reply_to: str = "") -> str:
        body: dict[str, Any] = {"channel_id": chat_id, "message": card.headline(), "props": self.card_props(card)}
        if reply_to:
            body["root_id"] = reply_to
        return str(self._json("POST", "/posts", json=body).get("id") or "")

    def update_card(self, chat_id: str, ref: str, card: Card) -> None:
        self._json("PUT", f"/posts/{ref}/patch", json={"message": card.headline(), "props": self.card_props(card)})

    @property
    def base(self) -> str:
        if not self.bot.api_base_url:
            raise CredentialRejected("The bot has no server URL.")
        return self.bot.api_base_url.rstrip("/") + "/api/v4"

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        # Through the outbound guard on every call: the server's address is checked (and pinned) now, not
        # only when the bot was saved, so a name that resolves somewhere private later never gets the token.
        base = self.base
        try:
            with netguard.pinned_sync_client(allowance=netguard.CHANNEL_HOSTS, home=base,
                                             timeout=kwargs.pop("timeout", 15)) as client:
                response = client.request(method, base + path, headers={"Authorization": f"Bearer {self.token}"},
                                          **kwargs)
        except netguard.Refused as exc:
            raise PlatformError(f"The Mattermost server's address was refused: {exc}") from None
        except httpx2.HTTPError as exc:
            raise PlatformError(f"Mattermost could not be reached ({type(exc).__name__}).") from None
        if response.status_code == 401:
            raise CredentialRejected("Mattermost rejected the bot token.")
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        if response.status_code >= 400:
            raise PlatformError(f"Mattermost answered {response.status_code} to {method} {path.split('?')[0]}.")
        return response.json() if response.content else {}

    def identity(self) -> Identity:
        me = self._json("GET", "/users/me")
        return Identity(user_id=str(me.get("id") or ""), username=str(me.get("username") or ""))

    def post(self, chat_id: str, text: str, *, reply_to: str = "") -> str:
        body = {"channel_id": chat_id, "message": text}
        if reply_to:
            body["root_id"] = reply_to
        return str(self._json("POST", "/posts", json=body).get("id") or "")

    def edit(self, chat_id: str, ref: str, text: str) -> None:
        self._json("PUT", f"/posts/{ref}/patch", json={"message": text})

    def is_member(self, chat_id: str, user_id: str) -> bool:
        response = self._request("GET", f"/channels/{chat_id}/members/{user_id}")
        if response.status_code == 404:
            return False
        if response.status_code >= 400:
            raise PlatformError(f"Mattermost answered {response.status_code} to a member lookup.")
        return True

    def channel_info(self, chat_id: str) -> ChannelInfo:
        channel = self._json("GET", f"/channels/{chat_id}")
        try:
            stats = self._json("GET", f"/channels/{chat_id}/stats")
        except PlatformError:
            stats = {}
        return ChannelInfo(name=str(channel.get("display_name") or channel.get("name") or ""),
                           purpose=str(channel.get("purpose") or ""), topic=str(channel.get("header") or ""),
                           member_count=stats.get("member_count"))

    def _names(self, ids: list[str]) -> dict[str, str]:
        if not ids:
            return {}
        users = self._json("POST", "/users/ids", json=ids)
        return {u["id"]: u.get("username") or u["id"] for u in users if isinstance(u, dict) and "id" in u}

    def members(self, chat_id: str, limit: int = 100) -> list[str]:
        rows = self._json("GET", f"/channels/{chat_id}/members?per_page={min(limit, 200)}")
        names = self._names([r["user_id"] for r in rows])
        return [names.get(r["user_id"], r["user_id"]) for r in rows]

    def search_channels(self, query: str, limit: int = 20) -> list[dict[str, str]]:
        teams = self._json("GET", "/users/me/teams")
        out: list[dict[str, str]] = []
        for team in teams:
            for channel in self._json("POST", f"/teams/{team['id']}/channels/search", json={"term": query}):
                out.append({"id": channel["id"], "name": channel.get("display_name") or channel.get("name", "")})
        return out[:limit]

    def _rows(self, data: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        posts = data.get("posts") or {}
        order = list(reversed(data.get("order") or []))
        names = self._names(sorted({posts[p]["user_id"] for p in order if p in posts}))
        rows = []
        for pid in order[-limit:]:
            p = posts.get(pid) or {}
            author = str(p.get("user_id") or "")
            rows.append({"speaker": names.get(author, author), "text": p.get("message", ""),
                         "files": [IncomingFile(ref=f) for f in p.get("file_ids") or []], "id": pid})
        return rows

    def history(self, chat_id: str, limit: int = 50) -> list[dict[str, Any]]:
        return self._rows(self._json("GET", f"/channels/{chat_id}/posts?per_page={min(limit, 200)}"), limit)

    def thread_history(self, chat_id: str, thread: str, limit: int = 50) -> list[dict[str, Any]]:
        data = self._json("GET", f"/posts/{thread}/thread")
        # The thread endpoint's order is not chronological; sort by create_at.
        posts = data.get("posts") or {}
        data["order"] = sorted(posts, key=lambda pid: posts[pid].get("create_at", 0), reverse=True)
        return self._rows(data, limit)

    def download(self, file: IncomingFile, max_bytes: int) -> Download:
        info = self._json("GET", f"/files/{file.ref}/info")
        file.name = file.name or str(info.get("name") or "file")
        file.mime = file.mime or str(info.get("mime_type") or "")
        if isinstance(info.get("size"), int) and info["size"] > max_bytes:
            raise PlatformError("The file is larger than the limit.")
        response = self._request("GET", f"/files/{file.ref}", timeout=30)
        if response.status_code != 200:
            raise PlatformError(f"Mattermost answered {response.status_code} for a file.")
        if len(response.content) > max_bytes:
            raise PlatformError("The file is larger than the limit.")
        return Download(response.content, response.headers.get("content-type", "").split(";")[0].strip().lower())

    def upload(self, chat_id: str, name: str, data: bytes, mime: str, *, reply_to: str = "") -> None:
        uploaded = self._json("POST", "/files", data={"channel_id": chat_id}, files={"files": (name, data, mime)},
                              timeout=60)
        ids = [f["id"] for f in uploaded.get("file_infos") or []]
        body: dict[str, Any] = {"channel_id": chat_id, "message": "", "file_ids": ids}
        if reply_to:
            body["root_id"] = reply_to
        self._json("POST", "/posts", json=body)

    def websocket_url(self) -> str:
        """The event socket's URL, its address checked by the guard first (the socket client is not pinned)."""
        base = self.bot.api_base_url.rstrip("/")
        try:
            netguard.check_url_blocking(base, allowance=netguard.CHANNEL_HOSTS)
        except netguard.Refused as exc:
            raise PlatformError(f"The Mattermost server's address was refused: {exc}") from None
        scheme = "wss://" if base.startswith("https://") else "ws://"
        return scheme + base.split("://", 1)[1] + "/api/v4/websocket"
