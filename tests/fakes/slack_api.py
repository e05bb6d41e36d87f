"""A local fake of the Slack Web API (real HTTP on 127.0.0.1, a thread), for the real slack-sdk WebClient.

Speaks what the adapter calls: auth.test, chat.postMessage and chat.update (text and Block Kit `blocks`),
chat.postEphemeral, conversations.members/info/replies (paged with `cursor`)/history/list, users.info,
files.getUploadURLExternal/completeUploadExternal, and serves files at
/files/<name> (url_private_download) behind the bot token. Parameters are read from the query string, a
form body or a JSON body, as Slack does; the token from `Authorization: Bearer`.

State a test scripts: `tokens` (valid bot tokens), `members[channel]`, `channels[channel]`,
`replies[(channel, thread_ts)]`, `users[user]`, `files[name] = (bytes, content_type)`, `upload_error`.
What a test reads: `posts` (every message with its edits and its current blocks), `ephemerals` (what one user
was shown), `calls` (every method called), `uploads` (bytes sent to an upload URL; files.completeUploadExternal
in `calls` says where they were shared).

Also `SlackEventSender`: plays Slack's side of the Events API (signed POSTs of event callbacks) and of
interactivity (`click`: the block_actions payload Slack posts when someone presses a button of a posted
message, form-encoded and signed like events).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest


class FakeServer:
    """A ThreadingHTTPServer on an ephemeral port with a route hook; subclasses implement `handle`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def _go(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = fake.handle(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._go("GET")

            def do_POST(self) -> None:
                self._go("POST")

            def do_PUT(self) -> None:
                self._go("PUT")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, bytes]:
        raise NotImplementedError

    @staticmethod
    def json_reply(data: Any, status: int = 200) -> tuple[int, dict, bytes]:
        return status, {"Content-Type": "application/json"}, json.dumps(data).encode()

    @staticmethod
    def multipart(headers: dict[str, str], body: bytes) -> dict[str, Any]:
        """A multipart/form-data body: field name → text, or (filename, content type, bytes) for a file."""
        from email.parser import BytesParser
        from email.policy import HTTP

        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {headers.get('content-type', '')}\r\n\r\n".encode() + body)
        fields: dict[str, Any] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            data = part.get_payload(decode=True) or b""
            filename = part.get_filename()
            fields[name] = (filename, part.get_content_type(), data) if filename else data.decode()
        return fields

    @staticmethod
    def params(path: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        params: dict[str, Any] = {k: v[-1] for k, v in parse_qs(urlsplit(path).query).items()}
        content_type = headers.get("content-type", "")
        if body and "json" in content_type:
            params.update(json.loads(body))
        elif body and "x-www-form-urlencoded" in content_type:
            params.update({k: v[-1] for k, v in parse_qs(body.decode()).items()})
        return params


@dataclass
class Post:
    channel: str
    ts: str
    text: str
    thread_ts: str = ""
    edits: list[str] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def final(self) -> str:
        return self.edits[-1] if self.edits else self.text

    def buttons(self) -> list[dict[str, Any]]:
        return [e for b in self.blocks if b.get("type") == "actions" for e in b.get("elements") or []
                if e.get("type") == "button"]


class FakeSlack(FakeServer):
    def __init__(self, tokens: tuple[str, ...] = ("xoxb-test-token-0001",), bot_user_id: str = "UBOT") -> None:
        super().__init__()
        self.tokens = set(tokens)
        self.bot_user_id = bot_user_id
        self.posts: list[Post] = []
        self.members: dict[str, list[str]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.replies: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.files: dict[str, tuple[bytes, str]] = {}
        self.uploads: list[dict[str, Any]] = []
        self.upload_error = ""  # e.g. "missing_scope": files.getUploadURLExternal refuses, as without files:write
        self.ephemerals: list[dict[str, Any]] = []
        self.replies_page = 200  # conversations.replies answers at most this many per page
        self._ts = itertools.count(1)

    @property
    def base_url(self) -> str:
        return self.url + "/api/"

    def file_url(self, name: str) -> str:
        return f"{self.url}/files/{name}"

    def answers(self, channel: str | None = None) -> list[Post]:
        with self.lock:
            return [p for p in self.posts if channel is None or p.channel == channel]

    def called(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [params for name, params in self.calls if name == method]

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, bytes]:
        route = urlsplit(path).path
        token = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if route.startswith("/files/"):
            name = route.removeprefix("/files/")
            if token not in self.tokens:
                # Slack's habit: 200 and its sign-in page.
                return 200, {"Content-Type": "text/html; charset=utf-8"}, b"<html>Sign in to Slack</html>"
            data, content_type = self.files.get(name, (b"", ""))
            if not content_type:
                return 404, {}, b""
            return 200, {"Content-Type": content_type}, data
        if route.startswith("/upload/"):
            with self.lock:
                self.uploads.append({"id": route.rsplit("/", 1)[-1], "bytes": body})
            return 200, {"Content-Type": "text/plain"}, b"OK"
        name = route.removeprefix("/api/")
        params = self.params(path, headers, body)
        with self.lock:
            self.calls.append((name, params))
        if token not in self.tokens:
            return self.json_reply({"ok": False, "error": "invalid_auth"})
        handler = getattr(self, "api_" + name.replace(".", "_"), None)
        if handler is None:
            return self.json_reply({"ok": False, "error": "unknown_method"})
        return self.json_reply(handler(params))

    def api_auth_test(self, p: dict) -> dict:
        return {"ok": True, "user_id": self.bot_user_id, "user": "agent-bot", "team_id": "T1"}

    def _next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    @staticmethod
    def _blocks(p: dict) -> list[dict[str, Any]] | None:
        blocks = p.get("blocks")
        if blocks is None:
            return None
        return json.loads(blocks) if isinstance(blocks, str) else list(blocks)

    def api_chat_postMessage(self, p: dict) -> dict:
        if len(p.get("text", "")) > 40000:
            return {"ok": False, "error": "msg_too_long"}
        ts = self._next_ts()
        with self.lock:
            self.posts.append(Post(channel=p["channel"], ts=ts, text=p.get("text", ""), thread_ts=p.get("thread_ts", ""),
                                   blocks=self._blocks(p) or []))
        return {"ok": True, "channel": p["channel"], "ts": ts}

    def api_chat_update(self, p: dict) -> dict:
        with self.lock:
            for post in self.posts:
                if post.channel == p["channel"] and post.ts == p["ts"]:
                    post.edits.append(p.get("text", ""))
                    blocks = self._blocks(p)
                    if blocks is not None:
                        post.blocks = blocks
                    return {"ok": True, "channel": p["channel"], "ts": p["ts"]}
        return {"ok": False, "error": "message_not_found"}

    def api_chat_postEphemeral(self, p: dict) -> dict:
        with self.lock:
            self.ephemerals.append({"channel": p["channel"], "user": p["user"], "text": p.get("text", ""),
                                    "thread_ts": p.get("thread_ts", "")})
        return {"ok": True, "message_ts": self._next_ts()}

    def post(self, channel: str, ts: str) -> Post:
        with self.lock:
            return next(p for p in self.posts if p.channel == channel and p.ts == ts)

    def api_conversations_members(self, p: dict) -> dict:
        if p["channel"] not in self.members:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "members": self.members[p["channel"]], "response_metadata": {"next_cursor": ""}}

    def api_conversations_info(self, p: dict) -> dict:
        channel = self.channels.get(p["channel"])
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": {"id": p["channel"], **channel}}

    def api_conversations_replies(self, p: dict) -> dict:
        messages = self.replies.get((p["channel"], p["ts"]))
        if messages is None:
            return {"ok": False, "error": "thread_not_found"}
        start = int(p.get("cursor") or 0)
        size = min(int(p.get("limit") or 200), self.replies_page)
        page = messages[start:start + size]
        more = start + size < len(messages)
        return {"ok": True, "messages": page, "has_more": more,
                "response_metadata": {"next_cursor": str(start + size) if more else ""}}

    def api_conversations_history(self, p: dict) -> dict:
        return {"ok": True, "messages": [
            {"user": "U1", "text": post.text, "ts": post.ts} for post in self.posts if post.channel == p["channel"]
        ][::-1]}

    def api_conversations_list(self, p: dict) -> dict:
        return {"ok": True, "channels": [{"id": cid, "name": c.get("name", "")} for cid, c in self.channels.items()]}

    def api_users_info(self, p: dict) -> dict:
        user = self.users.get(p["user"])
        if user is None:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": {"id": p["user"], **user}}

    def api_files_getUploadURLExternal(self, p: dict) -> dict:
        if self.upload_error:
            return {"ok": False, "error": self.upload_error}
        file_id = f"F{next(self._ts)}"
        return {"ok": True, "upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def api_files_completeUploadExternal(self, p: dict) -> dict:
        files = p.get("files")
        files = json.loads(files) if isinstance(files, str) else files
        return {"ok": True, "files": [{"id": f["id"], "title": f.get("title", "")} for f in files or []]}


class SlackEventSender:
    """Slack's side of the Events API: signed event callbacks POSTed to our route."""

    def __init__(self, client, bot_id: str, signing_secret: str, team_id: str = "T1", bot_user_id: str = "UBOT"):
        self.client = client
        self.bot_id = bot_id
        self.signing_secret = signing_secret
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self._ts = itertools.count(1)

    @property
    def path(self) -> str:
        return f"/api/v1/slack/{self.bot_id}/events"

    def next_ts(self) -> str:
        return f"1764000{next(self._ts):03d}.000100"

    def post_raw(self, body: bytes, *, timestamp: int | None = None, secret: str | None = None, headers=None):
        from channelbots.slack.verify import sign

        ts = str(timestamp if timestamp is not None else int(time.time()))
        extra = {
            "HTTP_X_SLACK_REQUEST_TIMESTAMP": ts,
            "HTTP_X_SLACK_SIGNATURE": sign(secret if secret is not None else self.signing_secret, body, ts),
            **(headers or {}),
        }
        return self.client.post(self.path, data=body, content_type="application/json", **extra)

    def callback(self, event: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "event_callback",
            "team_id": self.team_id,
            "event_id": f"Ev{next(self._ts)}",
            "event": event,
            "authorizations": [{"user_id": self.bot_user_id, "is_bot": True, "team_id": self.team_id}],
        }

    def message(self, text: str, *, user: str = "U1", channel: str = "C1", channel_type: str = "channel",
                ts: str | None = None, thread_ts: str | None = None, **extra: Any) -> dict[str, Any]:
        event = {"type": "message", "user": user, "text": text, "channel": channel, "channel_type": channel_type,
                 "ts": ts or self.next_ts(), **extra}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return event

    def send(self, event: dict[str, Any], **kwargs: Any):
        return self.post_raw(json.dumps(self.callback(event)).encode(), **kwargs)

    def block_actions(self, post: Post, action_id: str, *, user: str = "U1", user_name: str = "ada",
                      value: str | None = None) -> dict[str, Any]:
        """The payload Slack posts when `user` presses the button `action_id` of `post` (its real value)."""
        button = next((b for b in post.buttons() if b["action_id"] == action_id), None)
        if button is None and value is None:
            raise AssertionError(f"the message has no button {action_id!r}")
        message = {"type": "message", "ts": post.ts, "text": post.text, "blocks": post.blocks}
        if post.thread_ts:
            message["thread_ts"] = post.thread_ts
        return {
            "type": "block_actions",
            "user": {"id": user, "username": user_name, "name": user_name, "team_id": self.team_id},
            "api_app_id": "A1", "token": "legacy-verification-token",
            "container": {"type": "message", "message_ts": post.ts, "channel_id": post.channel, "is_ephemeral": False},
            "trigger_id": "1.2.3", "team": {"id": self.team_id, "domain": "acme"},
            "channel": {"id": post.channel, "name": "general"}, "message": message,
            "response_url": "https://hooks.slack.invalid/actions/T1/1/x",
            "actions": [{"action_id": action_id, "block_id": "agenticos_approval", "type": "button",
                         "value": value if value is not None else button["value"], "action_ts": "1764000000.1"}],
        }

    def interact(self, payload: dict[str, Any], *, secret: str | None = None, timestamp: int | None = None):
        from urllib.parse import urlencode

        from channelbots.slack.verify import sign

        body = urlencode({"payload": json.dumps(payload)}).encode()
        ts = str(timestamp if timestamp is not None else int(time.time()))
        return self.client.post(f"/api/v1/slack/{self.bot_id}/interactions", data=body,
                                content_type="application/x-www-form-urlencoded",
                                HTTP_X_SLACK_REQUEST_TIMESTAMP=ts,
                                HTTP_X_SLACK_SIGNATURE=sign(secret if secret is not None else self.signing_secret,
                                                            body, ts))

    def click(self, post: Post, action_id: str, **kwargs: Any):
        return self.interact(self.block_actions(post, action_id, **kwargs))


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server
