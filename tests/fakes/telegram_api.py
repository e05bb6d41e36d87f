"""A local fake of the Telegram Bot API: /bot<token>/<method> (JSON or form) and /file/bot<token>/<path>.

Scripted state: `token` (the valid one), `updates` (served by getUpdates from `offset`), `chat_members`,
`chats`, `files[file_id] = (path, bytes)`, `fail_updates` (how many getUpdates answer 500 first).
Recorded: `sent` (sendMessage / editMessageText with their texts and inline keyboards), `media` (sendPhoto /
sendDocument, multipart), `answers` (answerCallbackQuery), `calls`.
`press(chat_id, message_id, label, user_id)` builds the callback_query update Telegram sends when someone presses
an inline-keyboard button of a sent message (its real callback_data); `push_update` queues any update for
getUpdates. sendMessage refuses a text over 4,096 characters, as Telegram does.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.fakes.slack_api import FakeServer


class FakeTelegram(FakeServer):
    def __init__(self, token: str = "123456:ABCDEF-telegram", username: str = "acme_bot") -> None:
        super().__init__()
        self.token = token
        self.username = username
        self.updates: list[dict[str, Any]] = []
        self.chat_members: dict[tuple[str, str], str] = {}
        self.chats: dict[str, dict[str, Any]] = {}
        self.files: dict[str, tuple[str, bytes]] = {}
        self.messages: dict[tuple[str, int], dict[str, Any]] = {}
        self.fail_updates = 0
        self.webhook: dict[str, Any] = {}
        self.media: list[dict[str, Any]] = []  # sendPhoto / sendDocument: method, chat_id, reply_to, file
        self.answers: list[dict[str, Any]] = []  # answerCallbackQuery
        self._ids = itertools.count(1000)
        self.updates_served = threading.Event()

    def sent(self, chat_id: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [m for (c, _), m in self.messages.items() if chat_id is None or c == str(chat_id)]

    def push(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.updates.append({"update_id": len(self.updates) + 1, "message": message})

    def push_update(self, update: dict[str, Any]) -> None:
        with self.lock:
            self.updates.append({**update, "update_id": len(self.updates) + 1})

    def message(self, chat_id, message_id) -> dict[str, Any]:
        with self.lock:
            return self.messages[(str(chat_id), int(message_id))]

    def press(self, chat_id, message_id, label: str, *, user_id: int = 9, first_name: str = "Ada",
              data: str | None = None) -> dict[str, Any]:
        """The update Telegram sends when `user_id` presses the button `label` of a sent message."""
        message = self.message(chat_id, message_id)
        keyboard = (message.get("reply_markup") or {}).get("inline_keyboard") or []
        button = next((b for row in keyboard for b in row if b.get("text") == label), None)
        if button is None and data is None:
            raise AssertionError(f"the message has no button {label!r}")
        return {"update_id": 0, "callback_query": {
            "id": f"cb{next(self._ids)}", "from": {"id": user_id, "is_bot": False, "first_name": first_name},
            "message": {"message_id": int(message_id), "chat": {"id": int(chat_id), "type": "private"},
                        "text": message["edits"][-1] if message["edits"] else message["text"]},
            "chat_instance": "ci1", "data": data if data is not None else button["callback_data"]}}

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes):
        route = urlsplit(path).path
        if route.startswith("/file/bot"):
            token, _, file_path = route.removeprefix("/file/bot").partition("/")
            if token != self.token:
                return 401, {}, b""
            for path_, data in self.files.values():
                if path_ == file_path:
                    return 200, {"Content-Type": "application/octet-stream"}, data
            return 404, {}, b""
        token, _, name = route.removeprefix("/bot").partition("/")
        params = (self.params(path, headers, body) if "multipart" not in headers.get("content-type", "")
                  else self.multipart(headers, body))
        with self.lock:
            self.calls.append((name, params))
        if token != self.token:
            return self.json_reply({"ok": False, "error_code": 401, "description": "Unauthorized"}, 401)
        handler = getattr(self, "m_" + name, None)
        if handler is None:
            return self.json_reply({"ok": True, "result": True})
        return handler(params)

    def ok(self, result: Any):
        return self.json_reply({"ok": True, "result": result})

    def m_getMe(self, p):
        return self.ok({"id": 777, "is_bot": True, "username": self.username, "first_name": "Acme"})

    def m_deleteWebhook(self, p):
        self.webhook = {}
        return self.ok(True)

    def m_setWebhook(self, p):
        self.webhook = dict(p)
        return self.ok(True)

    def m_getUpdates(self, p):
        if self.fail_updates > 0:
            self.fail_updates -= 1
            return self.json_reply({"ok": False, "error_code": 502, "description": "Bad Gateway"}, 502)
        offset = int(p.get("offset") or 0)
        with self.lock:
            pending = [u for u in self.updates if u["update_id"] >= offset]
        self.updates_served.set()
        if not pending:
            import time

            time.sleep(min(float(p.get("timeout") or 0), 0.2))
        return self.ok(pending)

    def m_sendMessage(self, p):
        if len(p.get("text", "")) > 4096:
            return self.json_reply({"ok": False, "description": "Bad Request: message is too long"}, 400)
        message_id = next(self._ids)
        with self.lock:
            self.messages[(str(p["chat_id"]), message_id)] = {"text": p.get("text", ""), "edits": [],
                                                              "reply": p.get("reply_parameters"),
                                                              "reply_markup": p.get("reply_markup")}
        return self.ok({"message_id": message_id, "chat": {"id": p["chat_id"]}, "text": p.get("text", "")})

    def _media(self, method: str, field: str, p):
        upload = p.get(field)
        if not isinstance(upload, tuple):
            return self.json_reply({"ok": False, "description": f"Bad Request: there is no {field} in the request"},
                                   400)
        message_id = next(self._ids)
        with self.lock:
            self.media.append({"method": method, "chat_id": str(p.get("chat_id")), "message_id": message_id,
                               "reply_to": p.get("reply_to_message_id", ""), "name": upload[0], "mime": upload[1],
                               "bytes": upload[2]})
        return self.ok({"message_id": message_id, "chat": {"id": p.get("chat_id")}})

    def m_sendPhoto(self, p):
        return self._media("sendPhoto", "photo", p)

    def m_sendDocument(self, p):
        return self._media("sendDocument", "document", p)

    def m_editMessageText(self, p):
        if len(p.get("text", "")) > 4096:
            return self.json_reply({"ok": False, "description": "Bad Request: MESSAGE_TOO_LONG"}, 400)
        with self.lock:
            message = self.messages.get((str(p["chat_id"]), int(p["message_id"])))
            if message is None:
                return self.json_reply({"ok": False, "description": "Bad Request: message to edit not found"}, 400)
            message["edits"].append(p.get("text", ""))
            # Telegram: an edit without reply_markup takes the inline keyboard away.
            message["reply_markup"] = p.get("reply_markup")
        return self.ok(True)

    def m_answerCallbackQuery(self, p):
        with self.lock:
            self.answers.append(dict(p))
        return self.ok(True)

    def m_getChatMember(self, p):
        status = self.chat_members.get((str(p["chat_id"]), str(p["user_id"])), "left")
        return self.ok({"status": status, "user": {"id": p["user_id"]}})

    def m_getChat(self, p):
        chat = self.chats.get(str(p["chat_id"]))
        if chat is None:
            return self.json_reply({"ok": False, "description": "Bad Request: chat not found"}, 400)
        return self.ok(chat)

    def m_getChatMemberCount(self, p):
        return self.ok(len([k for k in self.chat_members if k[0] == str(p["chat_id"])]))

    def m_getChatAdministrators(self, p):
        return self.ok([{"status": "creator", "user": {"id": 1, "first_name": "Ada"}}])

    def m_getFile(self, p):
        entry = self.files.get(p["file_id"])
        if entry is None:
            return self.json_reply({"ok": False, "description": "Bad Request: invalid file_id"}, 400)
        return self.ok({"file_id": p["file_id"], "file_path": entry[0], "file_size": len(entry[1])})


def telegram_message(text: str = "", *, chat_id: int = 42, chat_type: str = "private", user_id: int = 9,
                     message_id: int | None = None, **extra: Any) -> dict[str, Any]:
    message = {"message_id": message_id or next(_message_ids), "from": {"id": user_id, "is_bot": False,
                                                                       "first_name": "Ada"},
               "chat": {"id": chat_id, "type": chat_type}, "date": 1764000000, **extra}
    if text:
        message["text"] = text
    return message


_message_ids = itertools.count(1)


@pytest.fixture
def fake_telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


def as_json(update: dict) -> bytes:
    return json.dumps(update).encode()
