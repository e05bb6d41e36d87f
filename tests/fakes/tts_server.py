"""A local fake of three speech APIs, as their clients speak them (real HTTP on 127.0.0.1, a thread):

- OpenAI `POST /v1/audio/speech` (JSON `model`, `input`, `voice`, `response_format` mp3|pcm, `instructions`;
  bearer key) → the audio bytes (`audio/mpeg`, or raw 24 kHz 16-bit PCM);
- ElevenLabs `POST /v1/text-to-speech/{voice_id}?output_format=mp3_44100_128|pcm_24000` (JSON `text`,
  `model_id`; key in `xi-api-key`) → the audio bytes; an unknown voice is 404 `detail.status voice_not_found`;
- Gemini `POST /v1beta/models/{model}:generateContent` (key in `x-goog-api-key`) → JSON with the PCM inline as
  base64 and `usageMetadata`; a bad key is Google's 400 with `details[].reason API_KEY_INVALID`.

The audio says which text it speaks: MP3 is an ID3 tag, one frame header and the text's bytes (so a joined clip
shows its chunks in order); PCM is `PCM_PER_CHARACTER` bytes per character (0.01 s), so a duration is known.
Errors use each provider's own envelope with a message that must never reach a log or the model.

Scripting: `server.queue("openai", Speech.error(500, "server_error"))`; an empty queue speaks. Every request is
recorded (`server.requests`, `.json`, `.headers`, `.query`, `.route`).
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
from urllib.parse import parse_qs, urlsplit

import pytest

MP3_HEAD = b"ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb\x90\x00"
PCM_PER_CHARACTER = 480  # 240 samples of 16-bit mono at 24 kHz: 0.01 s
SECRET_TEXT = "Your key sk-***9 of alice@example.com is not valid for this voice"
ROUTES = [
    ("openai", re.compile(r"^/v1/audio/speech$")),
    ("elevenlabs", re.compile(r"^/v1/text-to-speech/(?P<voice>[^/?]+)$")),
    ("gemini", re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")),
]


@dataclass
class Speech:
    status: int = 200
    code: str = ""
    audio: bytes | None = None  # None: speak the request's text
    finish_reason: str = "STOP"

    @classmethod
    def error(cls, status: int, code: str) -> Speech:
        return cls(status=status, code=code)


@dataclass
class Recorded:
    route: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any

    @property
    def text(self) -> str:
        body = self.json or {}
        if self.route == "openai":
            return str(body.get("input", ""))
        if self.route == "elevenlabs":
            return str(body.get("text", ""))
        return str(body["contents"][0]["parts"][0]["text"])


def mp3_of(text: str) -> bytes:
    return MP3_HEAD + text.encode()


def pcm_of(text: str) -> bytes:
    return b"\x01\x00" * (PCM_PER_CHARACTER // 2) * len(text)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def do_POST(self) -> None:
        fake = self.server.fake
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        matches = [(route, found) for route, pattern in ROUTES if (found := pattern.match(url.path))]
        if not matches:
            self._json(404, {"error": {"message": "no route"}})
            return
        route, found = matches[0]
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        recorded = Recorded(route, url.path, query, {k.lower(): v for k, v in self.headers.items()}, body)
        fake.record(recorded)
        getattr(self, f"_{route}")(fake, recorded, found.groupdict(), fake.next_reply(route))

    def _openai(self, fake: FakeSpeechServer, request: Recorded, _: dict[str, str], reply: Speech) -> None:
        if request.headers.get("authorization") != f"Bearer {fake.api_key}":
            reply = Speech.error(401, "invalid_api_key")
        if reply.status != 200:
            self._json(reply.status, {"error": {"message": SECRET_TEXT, "type": "invalid_request_error",
                                                "param": None, "code": reply.code}})
            return
        pcm = (request.json or {}).get("response_format") == "pcm"
        data = reply.audio if reply.audio is not None else (pcm_of if pcm else mp3_of)(request.text)
        self._send(200, data, "audio/pcm" if pcm else "audio/mpeg")

    def _elevenlabs(self, fake: FakeSpeechServer, request: Recorded, args: dict[str, str], reply: Speech) -> None:
        if request.headers.get("xi-api-key") != fake.api_key:
            reply = Speech.error(401, "invalid_api_key")
        elif args["voice"] not in fake.account_voices:
            reply = Speech.error(404, "voice_not_found")
        if reply.status != 200:
            self._json(reply.status, {"detail": {"status": reply.code, "message": SECRET_TEXT}})
            return
        pcm = request.query.get("output_format") == "pcm_24000"
        data = reply.audio if reply.audio is not None else (pcm_of if pcm else mp3_of)(request.text)
        self._send(200, data, "application/octet-stream" if pcm else "audio/mpeg")

    def _gemini(self, fake: FakeSpeechServer, request: Recorded, args: dict[str, str], reply: Speech) -> None:
        if request.headers.get("x-goog-api-key") != fake.api_key:
            self._json(400, {"error": {"code": 400, "message": SECRET_TEXT, "status": "INVALID_ARGUMENT", "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                 "domain": "googleapis.com"}]}})
            return
        if reply.status != 200:
            self._json(reply.status, {"error": {"code": reply.status, "message": SECRET_TEXT, "status": reply.code}})
            return
        if reply.finish_reason != "STOP":
            self._json(200, {"candidates": [{"finishReason": reply.finish_reason, "index": 0}],
                             "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}})
            return
        data = reply.audio if reply.audio is not None else pcm_of(request.text)
        self._json(200, {
            "candidates": [{"content": {"role": "model", "parts": [{"inlineData": {
                "mimeType": "audio/L16;codec=pcm;rate=24000", "data": base64.b64encode(data).decode()}}]},
                "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": len(request.text) // 4 or 1,
                              "candidatesTokenCount": round(len(data) / 48000 * 25),
                              "totalTokenCount": len(request.text) // 4 + round(len(data) / 48000 * 25)},
            "modelVersion": args["model"]})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeSpeechServer


@dataclass
class FakeSpeechServer:
    api_key: str = "sk-speech-key-never-shown-00000000"
    account_voices: set[str] = field(default_factory=lambda: {"JBFqnCBsd6RMkjVDRZzb"})
    requests: list[Recorded] = field(default_factory=list)
    _queues: dict[str, deque[Speech]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: _Server | None = None

    def start(self) -> FakeSpeechServer:
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

    def queue(self, route: str, *replies: Speech) -> None:
        with self._lock:
            self._queues.setdefault(route, deque()).extend(replies)

    def next_reply(self, route: str) -> Speech:
        with self._lock:
            queued = self._queues.get(route)
            return queued.popleft() if queued else Speech()

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)


@pytest.fixture
def fake_speech(settings) -> Iterator[FakeSpeechServer]:
    """A started fake of the three speech APIs; the operator points every speech provider at it and lists
    loopback for model traffic."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    server = FakeSpeechServer().start()
    settings.GENERATED_MEDIA_OPENAI_BASE_URL = f"{server.url}/v1"
    settings.GENERATED_MEDIA_ELEVENLABS_BASE_URL = server.url
    settings.GENERATED_MEDIA_GOOGLE_BASE_URL = server.url
    try:
        yield server
    finally:
        server.stop()
