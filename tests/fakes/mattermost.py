"""A local fake Mattermost: REST API v4 and the WebSocket event stream on the same host and port.

The REST side is a ThreadingHTTPServer; a GET to /api/v4/websocket with an Upgrade header is handed to the
`websockets` package's sans-I/O ServerProtocol on the raw socket (real handshake, real frames), so the
adapter's real WebSocket client talks to it. `emit_posted(...)` pushes a `posted` event to every open stream.

Scripted: `token`, `bot` (id, username), `members[(channel, user)]`, `channels[channel]`, `threads[root]`
(list of posts), `files[id] = (name, mime, bytes)`, `reject_token` (users/me answers 401).
Recorded: `posts` (created posts with their edits, props and file_ids), `uploads` (POST /files, multipart),
`calls`, `auth_challenges` (tokens the stream sent).
`press(post_id, action_id, user_id)` plays the server's side of an interactive message button: it looks the
action's integration up on the stored post (kept server-side, as Mattermost does) and returns the URL and the
JSON body Mattermost posts there. A post over 16,383 characters is refused, as Mattermost does.
"""

from __future__ import annotations

import itertools
import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from websockets.server import ServerProtocol

from tests.fakes.slack_api import FakeServer


class FakeMattermost(FakeServer):
    def __init__(self, token: str = "mm-bot-token-0001") -> None:
        super().__init__()
        self.token = token
        self.bot = {"id": "botuser", "username": "opsbot"}
        self.members: set[tuple[str, str]] = set()
        self.channels: dict[str, dict[str, Any]] = {}
        self.threads: dict[str, list[dict[str, Any]]] = {}
        self.files: dict[str, tuple[str, str, bytes]] = {}
        self.posts: dict[str, dict[str, Any]] = {}
        self.auth_challenges: list[str] = []
        self.uploads: dict[str, dict[str, Any]] = {}
        self.streams: list[queue.Queue] = []
        self.stream_opened = threading.Event()
        self._ids = itertools.count(1)

    def answers(self, channel: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [p for p in self.posts.values() if channel is None or p["channel_id"] == channel]

    # ------------------------------------------------------------------ stream

    def emit_posted(self, *, channel: str, user: str, message: str, channel_type: str = "O", mentions=None,
                    post_id: str | None = None, root_id: str = "") -> str:
        post_id = post_id or f"p{next(self._ids)}"
        post = {"id": post_id, "channel_id": channel, "user_id": user, "root_id": root_id, "message": message,
                "type": "", "create_at": int(time.time() * 1000)}
        event = {"event": "posted", "data": {"channel_type": channel_type, "post": json.dumps(post),
                                             "sender_name": f"@{user}", "mentions": json.dumps(mentions or [])},
                 "broadcast": {"channel_id": channel}, "seq": next(self._ids)}
        with self.lock:
            for stream in self.streams:
                stream.put(json.dumps(event))
        return post_id

    def serve_websocket(self, handler) -> None:
        protocol = ServerProtocol()
        raw = (handler.requestline + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in handler.headers.items())
               + "\r\n").encode()
        protocol.receive_data(raw)
        request = protocol.events_received()[0]
        sock: socket.socket = handler.connection
        auth = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if auth != self.token:
            protocol.send_response(protocol.reject(401, "Unauthorized"))
            sock.sendall(protocol.data_to_send()[0] if protocol.data_to_send() else b"")
            return
        protocol.send_response(protocol.accept(request))
        for chunk in protocol.data_to_send():
            sock.sendall(chunk)
        outbox: queue.Queue = queue.Queue()
        with self.lock:
            self.streams.append(outbox)
        hello = {"event": "hello", "data": {"server_version": "fake"}, "seq": 0}
        outbox.put(json.dumps(hello))
        self.stream_opened.set()
        sock.settimeout(0.1)
        try:
            while True:
                try:
                    while True:
                        protocol.send_text(outbox.get_nowait().encode())
                except queue.Empty:
                    pass
                for chunk in protocol.data_to_send():
                    sock.sendall(chunk)
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    return
                protocol.receive_data(data)
                for frame in protocol.events_received():
                    text = getattr(frame, "data", b"")
                    try:
                        message = json.loads(text)
                    except (ValueError, TypeError):
                        continue
                    if message.get("action") == "authentication_challenge":
                        self.auth_challenges.append(message.get("data", {}).get("token", ""))
                for chunk in protocol.data_to_send():
                    sock.sendall(chunk)
                if protocol.state.name == "CLOSED" or protocol.close_expected():
                    return  # the server closes TCP after the closing handshake, as RFC 6455 asks
        except OSError:
            return
        finally:
            with self.lock:
                self.streams.remove(outbox)

    # ------------------------------------------------------------------ interactive buttons

    @staticmethod
    def actions_of(post: dict[str, Any]) -> list[dict[str, Any]]:
        return [a for att in (post.get("props") or {}).get("attachments") or [] for a in att.get("actions") or []]

    def press(self, post_id: str, action_id: str, *, user_id: str = "u-ada",
              user_name: str = "ada") -> tuple[str, dict[str, Any]]:
        """(integration URL, body) of a click on the button `action_id` of a stored post."""
        with self.lock:
            post = self.posts[post_id]
        action = next((a for a in self.actions_of(post) if a.get("id") == action_id), None)
        if action is None:
            raise AssertionError(f"the post has no button {action_id!r}")
        integration = action["integration"]
        body = {"user_id": user_id, "user_name": user_name, "channel_id": post["channel_id"], "channel_name": "town",
                "team_id": "team1", "team_domain": "acme", "post_id": post_id, "trigger_id": "trig1", "type": "",
                "data_source": "", "context": dict(integration.get("context") or {})}
        return integration["url"], body

    # ------------------------------------------------------------------ REST

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes):
        route = urlsplit(path).path.removeprefix("/api/v4")
        token = headers.get("authorization", "").removeprefix("Bearer ").strip()
        with self.lock:
            self.calls.append((f"{method} {route}", {}))
        if token != self.token:
            return self.json_reply({"id": "api.context.session_expired.app_error"}, 401)
        data = json.loads(body) if body and "json" in headers.get("content-type", "") else {}
        if route == "/users/me":
            return self.json_reply(self.bot)
        if route == "/files" and method == "POST":
            fields = self.multipart(headers, body)
            upload = fields.get("files")
            if not isinstance(upload, tuple) or not fields.get("channel_id"):
                return self.json_reply({"message": "bad upload"}, 400)
            file_id = f"f{next(self._ids)}"
            with self.lock:
                self.uploads[file_id] = {"channel_id": fields["channel_id"], "name": upload[0], "mime": upload[1],
                                         "bytes": upload[2]}
            return self.json_reply({"file_infos": [{"id": file_id, "name": upload[0], "mime_type": upload[1]}]}, 201)
        if route == "/posts" and method == "POST":
            if len(data.get("message", "")) > 16383:
                return self.json_reply({"id": "model.post.is_valid.msg.app_error"}, 400)
            post_id = f"bp{next(self._ids)}"
            post = {"id": post_id, "channel_id": data["channel_id"], "message": data.get("message", ""),
                    "root_id": data.get("root_id", ""), "file_ids": list(data.get("file_ids") or []), "edits": [],
                    "props": data.get("props") or {}}
            with self.lock:
                self.posts[post_id] = post
            return self.json_reply({k: v for k, v in post.items() if k != "edits"}, 201)
        if route.startswith("/posts/") and route.endswith("/patch"):
            post_id = route.split("/")[2]
            with self.lock:
                if "message" in data:
                    self.posts[post_id]["edits"].append(data.get("message", ""))
                if "props" in data:
                    self.posts[post_id]["props"] = data["props"]
            return self.json_reply({"id": post_id})
        if route.startswith("/posts/") and route.endswith("/thread"):
            root = route.split("/")[2]
            posts = self.threads.get(root)
            if posts is None:
                return self.json_reply({"message": "not found"}, 404)
            return self.json_reply({"order": [p["id"] for p in posts], "posts": {p["id"]: p for p in posts}})
        if route.startswith("/channels/") and "/members/" in route:
            _, _, channel, _, user = route.split("/")
            if (channel, user) in self.members:
                return self.json_reply({"channel_id": channel, "user_id": user})
            return self.json_reply({"message": "not found"}, 404)
        if route.startswith("/channels/"):
            channel = self.channels.get(route.split("/")[2])
            return self.json_reply(channel) if channel else self.json_reply({"message": "not found"}, 404)
        if route == "/users/ids":
            return self.json_reply([{"id": i, "username": i} for i in data])
        return self.json_reply({"message": "not found"}, 404)


def _patch_get(fake: FakeMattermost) -> None:
    """Route an Upgrade GET on the stream path to the WebSocket side."""
    handler_class = fake.server.RequestHandlerClass
    original = handler_class.do_GET

    def do_GET(self) -> None:  # noqa: N802
        if urlsplit(self.path).path == "/api/v4/websocket" and "upgrade" in self.headers.get("Connection", "").lower():
            self.close_connection = True
            fake.serve_websocket(self)
            return
        original(self)

    handler_class.do_GET = do_GET


def start_fake_mattermost(**kwargs: Any) -> FakeMattermost:
    fake = FakeMattermost(**kwargs)
    _patch_get(fake)
    return fake.start()


@pytest.fixture
def fake_mattermost() -> Iterator[FakeMattermost]:
    fake = start_fake_mattermost()
    try:
        yield fake
    finally:
        fake.stop()
