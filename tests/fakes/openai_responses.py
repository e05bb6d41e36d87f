"""A local fake of OpenAI's Responses API with its image tool (`POST /v1/responses`, non-streamed), as the
OpenAI SDK and pydantic-ai's `OpenAIResponsesModel` speak it: a request whose `tools` carries
`{"type": "image_generation", ...}` is answered with an `image_generation_call` output item (the image as
base64 in `result`) and a short assistant message, with the response's `usage`.

Scripting (per test): `server.queue(ImageReply.image(PNG), ImageReply.error(401, "invalid_api_key"))`; an
empty queue answers with a small PNG. Every request is recorded (`server.requests`, `.bearer`, `.json`).
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

# An 8-byte PNG signature and an IHDR chunk: enough for a type sniffer, and bytes nobody could mistake.
SMALL_PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489") + b"fake-image"


@dataclass
class ImageReply:
    status: int = 200
    image: bytes | None = SMALL_PNG
    output_format: str = "png"
    revised_prompt: str = ""
    error_code: str = ""
    error_message: str = ""
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 120, "output_tokens": 30})

    @classmethod
    def image_of(cls, data: bytes, *, output_format: str = "png", revised_prompt: str = "") -> ImageReply:
        return cls(image=data, output_format=output_format, revised_prompt=revised_prompt)

    @classmethod
    def without_image(cls) -> ImageReply:
        """The model answered in words and drew nothing."""
        return cls(image=None)

    @classmethod
    def error(cls, status: int, code: str, message: str = "provider says no") -> ImageReply:
        return cls(status=status, image=None, error_code=code, error_message=message)


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def bearer(self) -> str | None:
        value = self.headers.get("authorization", "")
        return value[7:] if value.lower().startswith("bearer ") else None

    @property
    def image_tool(self) -> dict[str, Any] | None:
        tools = (self.json or {}).get("tools") or []
        return next((tool for tool in tools if tool.get("type") == "image_generation"), None)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        fake.record(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path != "/v1/responses":
            self._send(404, {"error": {"message": "Unknown route", "type": "invalid_request_error", "code": None}})
            return
        reply = fake.next_reply()
        if reply.status != 200:
            self._send(reply.status, {"error": {"message": reply.error_message, "type": "invalid_request_error",
                                                "param": None, "code": reply.error_code}})
            return
        self._send(200, fake.response_for(body or {}, reply))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeResponsesServer


class FakeResponsesServer:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.ids = itertools.count(1)
        self._queue: deque[ImageReply] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeResponsesServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def queue(self, *replies: ImageReply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def next_reply(self) -> ImageReply:
        with self._lock:
            return self._queue.popleft() if self._queue else ImageReply()

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def response_for(self, body: dict[str, Any], reply: ImageReply) -> dict[str, Any]:
        number = next(self.ids)
        tool = next((t for t in body.get("tools") or [] if t.get("type") == "image_generation"), {})
        output: list[dict[str, Any]] = []
        if reply.image is not None and tool:
            output.append({
                "id": f"ig_{number}", "type": "image_generation_call", "status": "completed",
                "result": base64.b64encode(reply.image).decode(), "output_format": reply.output_format,
                "background": tool.get("background", "auto"), "quality": tool.get("quality", "auto"),
                "size": tool.get("size", "auto"), "revised_prompt": reply.revised_prompt or None,
            })
        output.append({"id": f"msg_{number}", "type": "message", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": "Here is the image.", "annotations": []}]})
        usage = reply.usage
        return {
            "id": f"resp_{number}", "object": "response", "created_at": 1_780_000_000, "status": "completed",
            "model": body.get("model", "unknown"), "output": output, "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
            "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
            "temperature": 1.0, "top_p": 1.0,
            "usage": {"input_tokens": usage["input_tokens"], "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": usage["output_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": usage["input_tokens"] + usage["output_tokens"]},
        }


@pytest.fixture
def fake_responses(settings) -> Iterator[FakeResponsesServer]:
    """A started fake Responses API; the operator points the image provider at it and lists loopback for
    model traffic (the guard's own tests prove an empty list refuses it)."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    server = FakeResponsesServer().start()
    settings.GENERATED_MEDIA_OPENAI_BASE_URL = server.base_url
    try:
        yield server
    finally:
        server.stop()
