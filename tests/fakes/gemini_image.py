"""A local fake of Gemini's image generation, as google-genai speaks it (real HTTP on 127.0.0.1, a thread):

`POST /v1/models/{model}:generateContent` (or `/v1beta/`) (key in `x-goog-api-key`; `generationConfig.responseModalities`
and `generationConfig.imageConfig`) → a candidate whose parts are a short text and the image as `inlineData`
(base64), with `usageMetadata` counting the image as 1290 output tokens of modality IMAGE, as Gemini does at 1K.

Errors use Google's envelope with a message that must never reach a log or the model: a wrong key is 400
`INVALID_ARGUMENT` with `details[].reason API_KEY_INVALID`; `GeminiImage.error(429, "RESOURCE_EXHAUSTED")` and
the like answer with that status; `GeminiImage.blocked("IMAGE_SAFETY")` is a 200 whose candidate finished on a
safety filter without an image.

Scripting: `server.queue(GeminiImage.error(503, "UNAVAILABLE"))`; an empty queue draws `SMALL_PNG`. Every request
is recorded (`server.requests`, `.json`, `.headers`, `.model`).
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

SMALL_PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489") + b"gemini-image"
SECRET_TEXT = "API key AIza***7 of alice@example.com is not valid. Please pass a valid API key."
IMAGE_TOKENS = 1290
# google-genai speaks `v1` by default; Gemini serves both versions.
ROUTE = re.compile(r"^/v1(beta)?/models/(?P<model>[^/:]+):generateContent$")


@dataclass
class GeminiImage:
    status: int = 200
    code: str = ""
    image: bytes = SMALL_PNG
    mime_type: str = "image/png"
    finish_reason: str = "STOP"

    @classmethod
    def error(cls, status: int, code: str) -> GeminiImage:
        return cls(status=status, code=code)

    @classmethod
    def blocked(cls, finish_reason: str) -> GeminiImage:
        return cls(finish_reason=finish_reason)


@dataclass
class Recorded:
    model: str
    headers: dict[str, str]
    json: Any

    @property
    def prompt(self) -> str:
        return " ".join(str(part.get("text", "")) for content in (self.json or {}).get("contents", [])
                        for part in content.get("parts", []))

    @property
    def generation_config(self) -> dict[str, Any]:
        return dict((self.json or {}).get("generationConfig") or {})


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        found = ROUTE.match(urlsplit(self.path).path)
        if found is None:
            self._json(404, {"error": {"code": 404, "message": "no route", "status": "NOT_FOUND"}})
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        request = Recorded(found["model"], {k.lower(): v for k, v in self.headers.items()}, body)
        fake.record(request)
        reply = fake.next_reply()
        if request.headers.get("x-goog-api-key") != fake.api_key:
            self._json(400, {"error": {"code": 400, "message": SECRET_TEXT, "status": "INVALID_ARGUMENT", "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                 "domain": "googleapis.com"}]}})
            return
        if reply.status != 200:
            self._json(reply.status, {"error": {"code": reply.status, "message": SECRET_TEXT, "status": reply.code}})
            return
        prompt_tokens = max(1, len(request.prompt) // 4)
        if reply.finish_reason != "STOP":
            self._json(200, {"candidates": [{"finishReason": reply.finish_reason, "index": 0}],
                             "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens},
                             "modelVersion": request.model})
            return
        self._json(200, {
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "Here is the image."},
                {"inlineData": {"mimeType": reply.mime_type, "data": base64.b64encode(reply.image).decode()}}]},
                "finishReason": "STOP", "index": 0}],
            "usageMetadata": {
                "promptTokenCount": prompt_tokens, "candidatesTokenCount": IMAGE_TOKENS + 5,
                "totalTokenCount": prompt_tokens + IMAGE_TOKENS + 5,
                "candidatesTokensDetails": [{"modality": "IMAGE", "tokenCount": IMAGE_TOKENS},
                                            {"modality": "TEXT", "tokenCount": 5}]},
            "modelVersion": request.model})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeGeminiImageServer


@dataclass
class FakeGeminiImageServer:
    api_key: str = "AIza-gemini-image-key-never-shown-0000"
    requests: list[Recorded] = field(default_factory=list)
    _queue: deque[GeminiImage] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: _Server | None = None

    def start(self) -> FakeGeminiImageServer:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def queue(self, *replies: GeminiImage) -> None:
        with self._lock:
            self._queue.extend(replies)

    def next_reply(self) -> GeminiImage:
        with self._lock:
            return self._queue.popleft() if self._queue else GeminiImage()

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)


@pytest.fixture
def fake_gemini_image(settings) -> Iterator[FakeGeminiImageServer]:
    """A started fake of Gemini's generateContent drawing images; the operator points the Google image provider
    at it and lists loopback for model traffic."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    server = FakeGeminiImageServer().start()
    settings.GENERATED_MEDIA_GOOGLE_BASE_URL = server.url
    try:
        yield server
    finally:
        server.stop()
