"""A local fake of OpenAI's Realtime API over WebSocket (`/v1/realtime?model=…`), speaking its event protocol
(real WebSocket on 127.0.0.1, its own event loop in a thread).

What it does, as the provider does:
- refuses a connection without `Authorization: Bearer <key>` (HTTP 401 before the upgrade);
- `session.created` on connect; `session.update` → `session.updated` (the session is recorded);
- `input_audio_buffer.append` is buffered; once `utterance_bytes` have arrived, server VAD "hears" the next line of
  `heard` (`input_audio_buffer.speech_started`, `…speech_stopped`, `…committed`,
  `conversation.item.input_audio_transcription.completed`) and a response follows; `input_audio_buffer.clear`
  empties the buffer;
- a response plays the next scripted `Reply`: speech (`response.created`, `response.audio.delta` — PCM16 at
  `PCM_PER_CHARACTER` bytes a character —, `response.audio_transcript.delta` per word, `…done`,
  `response.audio.done`), a function call (`response.function_call_arguments.delta` / `.done`), or an `error`;
  every response ends with `response.done` and its `usage` (text and audio tokens in and out);
- `conversation.item.create` + `response.create` (a function's output, a message) → the next reply.

Scripting: `server.replies.append(Reply.say("Hi"))`, `server.heard.append("What is the weather?")`. Everything
received is recorded (`server.received`, `server.headers`, `server.connections`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Response

from tests.fakes.ports import listening_socket

PCM_PER_CHARACTER = 480
KEY = "sk-realtime-test-key-0001"


@dataclass
class Reply:
    text: str = ""
    function: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    usage: dict[str, Any] | None = None

    @classmethod
    def say(cls, text: str) -> Reply:
        return cls(text=text)

    @classmethod
    def call(cls, name: str, **arguments: Any) -> Reply:
        return cls(function=name, arguments=arguments)

    @classmethod
    def fail(cls, code: str) -> Reply:
        return cls(error=code)

    def usage_of(self) -> dict[str, Any]:
        if self.usage is not None:
            return self.usage
        audio_out = len(self.text) // 2
        text_out = len(self.text.split()) + (10 if self.function else 0)
        return {"total_tokens": 120 + audio_out + text_out, "input_tokens": 120, "output_tokens": audio_out + text_out,
                "input_token_details": {"text_tokens": 100, "audio_tokens": 20, "cached_tokens": 0,
                                        "cached_tokens_details": {"text_tokens": 0, "audio_tokens": 0}},
                "output_token_details": {"text_tokens": text_out, "audio_tokens": audio_out}}


class FakeRealtime:
    def __init__(self, *, utterance_bytes: int = 4800):
        self.utterance_bytes = utterance_bytes
        self.replies: deque[Reply] = deque()
        self.heard: deque[str] = deque()
        # What VAD hears once `heard` is empty; None: nothing (a browser's fake microphone sends audio all along).
        self.default_heard: str | None = "Hello there."
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []  # each connection's path and query (`/v1/realtime?model=…`)
        self.sessions: list[dict[str, Any]] = []
        self.connections = 0
        self._sock = listening_socket()
        self.port = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._counter = 0

    # ---- lifecycle

    def start(self) -> FakeRealtime:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set_result, None)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stop = self._loop.create_future()
        async with serve(self._handle, sock=self._sock, process_request=self._authorize, max_size=16 * 1024 * 1024):
            self._ready.set()
            await self._stop

    def _authorize(self, connection: ServerConnection, request: Any) -> Response | None:
        self.headers.append({k.lower(): v for k, v in request.headers.raw_items()})
        self.paths.append(request.path)
        if request.headers.get("Authorization") != f"Bearer {KEY}" or not request.path.startswith("/v1/realtime"):
            body = json.dumps({"error": {"type": "invalid_request_error", "code": "invalid_api_key",
                                         "message": "Incorrect API key provided"}}).encode()
            return Response(401, "Unauthorized", Headers([("Content-Type", "application/json")]), body)
        return None

    def reset(self) -> None:
        self.replies.clear()
        self.heard.clear()
        self.default_heard = "Hello there."
        self.received.clear()
        self.headers.clear()
        self.paths.clear()
        self.sessions.clear()
        self.connections = 0

    def received_types(self) -> list[str]:
        return [event.get("type", "") for event in self.received]

    # ---- protocol

    def _id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}_{self._counter:04d}"

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        buffered = 0
        await self._send(ws, {"type": "session.created", "session": {"id": self._id("sess"), "object": "realtime.session"}})
        async for raw in ws:
            event = json.loads(raw)
            self.received.append(event)
            kind = event.get("type")
            if kind == "session.update":
                self.sessions.append(event.get("session") or {})
                await self._send(ws, {"type": "session.updated", "session": event.get("session") or {}})
            elif kind == "input_audio_buffer.append":
                buffered += len(base64.b64decode(event.get("audio") or ""))
                if buffered >= self.utterance_bytes and (self.heard or self.default_heard is not None):
                    buffered = 0
                    await self._utterance(ws)
            elif kind == "input_audio_buffer.clear":
                buffered = 0
                await self._send(ws, {"type": "input_audio_buffer.cleared"})
            elif kind == "conversation.item.create":
                await self._send(ws, {"type": "conversation.item.created", "item": event.get("item") or {}})
            elif kind == "response.create":
                await self._respond(ws)

    async def _send(self, ws: ServerConnection, event: dict[str, Any]) -> None:
        event.setdefault("event_id", self._id("event"))
        await ws.send(json.dumps(event))

    async def _utterance(self, ws: ServerConnection) -> None:
        item_id = self._id("item")
        await self._send(ws, {"type": "input_audio_buffer.speech_started", "audio_start_ms": 0, "item_id": item_id})
        await self._send(ws, {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 200, "item_id": item_id})
        await self._send(ws, {"type": "input_audio_buffer.committed", "item_id": item_id, "previous_item_id": None})
        transcript = self.heard.popleft() if self.heard else str(self.default_heard)
        await self._send(ws, {"type": "conversation.item.input_audio_transcription.completed", "item_id": item_id,
                              "content_index": 0, "transcript": transcript})
        await self._respond(ws)

    async def _respond(self, ws: ServerConnection) -> None:
        if not self.replies:
            return
        reply = self.replies.popleft()
        response_id, item_id = self._id("resp"), self._id("item")
        if reply.error:
            await self._send(ws, {"type": "error", "error": {
                "type": "server_error", "code": reply.error, "message": f"Something about {KEY[:6]}… went wrong"}})
            return
        await self._send(ws, {"type": "response.created", "response": {"id": response_id, "status": "in_progress"}})
        if reply.function:
            call_id = self._id("call")
            arguments = json.dumps(reply.arguments)
            await self._send(ws, {"type": "response.function_call_arguments.delta", "response_id": response_id,
                                  "item_id": item_id, "call_id": call_id, "delta": arguments})
            await self._send(ws, {"type": "response.function_call_arguments.done", "response_id": response_id,
                                  "item_id": item_id, "call_id": call_id, "name": reply.function,
                                  "arguments": arguments})
        else:
            pcm = b"\x01\x00" * (PCM_PER_CHARACTER // 2) * len(reply.text)
            await self._send(ws, {"type": "response.audio.delta", "response_id": response_id, "item_id": item_id,
                                  "delta": base64.b64encode(pcm).decode()})
            for word in reply.text.split(" "):
                await self._send(ws, {"type": "response.audio_transcript.delta", "response_id": response_id,
                                      "item_id": item_id, "delta": word + " "})
            await self._send(ws, {"type": "response.audio.done", "response_id": response_id, "item_id": item_id})
            await self._send(ws, {"type": "response.audio_transcript.done", "response_id": response_id,
                                  "item_id": item_id, "transcript": reply.text})
        await self._send(ws, {"type": "response.done", "response": {
            "id": response_id, "status": "completed", "usage": reply.usage_of()}})


@pytest.fixture(scope="module")
def realtime_server() -> Iterator[FakeRealtime]:
    server = FakeRealtime().start()
    yield server
    server.stop()
