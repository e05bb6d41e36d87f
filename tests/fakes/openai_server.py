"""A local OpenAI-compatible HTTP server for tests: real HTTP on 127.0.0.1, an ephemeral port, a thread.

Standard library only (`http.server.ThreadingHTTPServer`): nothing to install, starts in milliseconds, and a
blocking handler per request makes "answer slowly" (timeouts) and "stream word by word" trivial to script.

Speaks:
- `POST /v1/chat/completions` — JSON, or SSE when `stream: true` (`data: {chunk}` lines, text word by word,
  `tool_calls` deltas with the id + name first and the arguments in pieces, a finish chunk, a usage chunk when
  `stream_options.include_usage`, then `data: [DONE]`).
- `POST /v1/embeddings` — deterministic vectors (sha256 of the text), `float` or `base64` encoding.
- `POST /v1/audio/transcriptions` — multipart upload in, scripted text out (`json`, `text`, `verbose_json`).
- `GET /v1/models`.

Scripting (per test): `server.queue(Reply.text("Hi"), Reply.tool_call("create_chart", {...}), route="chat")`.
Each request to a route pops the next reply; an empty queue answers with a default (chat: `default_text`,
transcriptions: `default_transcription`, embeddings: vectors). `Reply.error(500)` / `Reply.error(401)` answer
with OpenAI's error envelope (and `x-should-retry: false` unless told otherwise, so SDK retries do not slow a
test down); any reply can carry `delay=` seconds (the handler waits, interruptible by `stop()`).
`FakeOpenAIServer(api_key="sk-…")` answers 401 to any other bearer token without consuming the queue.

Every request is recorded (`server.requests`, `server.requests_to("chat")`): method, path, lower-cased headers,
raw body, parsed JSON or multipart form, so tests can assert the Authorization header and that no secret
reached the messages.

Fixture: `fake_openai` (a started server, 127.0.0.1 in MODEL_ALLOWED_PRIVATE_HOSTS; stopped after the test). Also
usable as `with FakeOpenAIServer() as s:` (then list 127.0.0.1 yourself).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

ROUTES = {
    "/v1/chat/completions": "chat",
    "/v1/embeddings": "embeddings",
    "/v1/audio/transcriptions": "transcriptions",
}
CREATED = 1_764_000_000  # fixed, so responses are deterministic


@dataclass
class Reply:
    """One scripted answer. Build with the classmethods."""

    content: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    error_type: str | None = None
    error_code: str | None = None
    error_message: str = ""
    should_retry: bool | None = False
    delay: float = 0.0
    usage: dict[str, int] | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def text(cls, text: str, *, usage: dict[str, int] | None = None, delay: float = 0.0) -> Reply:
        return cls(content=text, usage=usage, delay=delay)

    @classmethod
    def tool_call(
        cls, name: str, arguments: dict[str, Any] | str | None = None, *, id: str | None = None, text: str = "",
        usage: dict[str, int] | None = None,
    ) -> Reply:
        return cls.tool_calls([{"name": name, "arguments": arguments or {}, "id": id}], text=text, usage=usage)

    @classmethod
    def tool_calls(cls, calls: list[dict[str, Any]], *, text: str = "", delay: float = 0.0,
                   usage: dict[str, int] | None = None) -> Reply:
        """`calls`: [{"name", "arguments" (dict or JSON text), "id" (optional)}]; `usage`: what the provider
        reports billing (default: the words of the request and the answer)."""
        return cls(content=text, calls=list(calls), delay=delay, usage=usage)

    @classmethod
    def error(
        cls,
        status: int,
        message: str | None = None,
        *,
        type: str | None = None,
        code: str | None = None,
        should_retry: bool | None = False,
        delay: float = 0.0,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        defaults = {
            401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
            404: ("invalid_request_error", "model_not_found", "The model does not exist."),
            429: ("requests", "rate_limit_exceeded", "Rate limit reached."),
        }
        d_type, d_code, d_message = defaults.get(status, ("server_error", None, "The server had an error."))
        return cls(
            status=status,
            error_type=type or d_type,
            error_code=code or d_code,
            error_message=message or d_message,
            should_retry=should_retry,
            delay=delay,
            headers=dict(headers or {}),
        )

    @classmethod
    def slow(cls, delay: float, then: Reply | None = None) -> Reply:
        """Wait `delay` seconds before answering (for timeout tests)."""
        reply = then or cls(content="late")
        reply.delay = delay
        return reply



@dataclass
class RecordedRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    json: Any = None
    form: dict[str, Any] | None = None

    @property
    def route(self) -> str | None:
        return ROUTES.get(self.path)

    @property
    def bearer(self) -> str | None:
        value = self.headers.get("authorization", "")
        return value[7:] if value.lower().startswith("bearer ") else None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def _words(text: str) -> int:
    return len(text.split())


def _message_text(messages: list[dict[str, Any]]) -> str:
    chunks: list[str] = []
    for message in messages or []:
        content = message.get("content")
        if isinstance(content, str):
            chunks.append(content)
        elif isinstance(content, list):
            chunks.extend(str(item.get("text", "")) for item in content if isinstance(item, dict))
        for call in message.get("tool_calls") or []:
            chunks.append(str((call.get("function") or {}).get("arguments", "")))
    return " ".join(chunks)


def embedding_for(text: str, dimensions: int = 8) -> list[float]:
    """Deterministic unit vector for a text (the same text always gives the same vector)."""
    values: list[float] = []
    counter = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((byte / 127.5) - 1.0 for byte in digest)
        counter += 1
    values = values[:dimensions]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    # ------------------------------------------------------------------ plumbing
    def _read(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        headers = {key.lower(): value for key, value in self.headers.items()}
        recorded = RecordedRequest(self.command, parts.path, parts.query, headers, body)
        content_type = headers.get("content-type", "")
        if "json" in content_type and body:
            try:
                recorded.json = json.loads(body)
            except ValueError:
                recorded.json = None
        elif content_type.startswith("multipart/form-data"):
            recorded.form = _parse_multipart(content_type, body)
        self.server.fake.record(recorded)
        return recorded

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error_reply(self, reply: Reply) -> None:
        headers = dict(reply.headers)
        if reply.should_retry is not None:
            headers.setdefault("x-should-retry", "true" if reply.should_retry else "false")
        payload = {
            "error": {"message": reply.error_message, "type": reply.error_type, "param": None, "code": reply.error_code}
        }
        self._send_json(reply.status, payload, headers)

    def _wait(self, delay: float) -> bool:
        """Sleep, unless the server is stopping. False when it is (the handler then gives up)."""
        return not (delay and self.server.fake.stopping.wait(delay))

    # ------------------------------------------------------------------ routes
    def do_GET(self) -> None:
        recorded = self._read()
        if recorded.path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model",
                                                              "created": CREATED, "owned_by": "fake"}]})
        else:
            self._send_json(404, {"error": {"message": "Not found.", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        recorded = self._read()
        fake = self.server.fake
        route = recorded.route
        try:
            if route is None:
                self._send_json(404, {"error": {"message": "Not found.", "type": "invalid_request_error"}})
                return
            if fake.api_key is not None and recorded.bearer != fake.api_key:
                self._send_error_reply(Reply.error(401))
                return
            reply = fake.next_reply(route)
            if reply is not None and not self._wait(reply.delay):
                return
            if reply is not None and reply.status >= 400:
                self._send_error_reply(reply)
                return
            if route == "chat":
                self._chat(recorded.json or {}, reply or Reply(content=fake.default_text))
            elif route == "embeddings":
                self._embeddings(recorded.json or {})
            else:
                self._transcription(recorded.form or {}, reply)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (a timeout test); nothing left to answer.
            self.close_connection = True

    def _chat(self, body: dict[str, Any], reply: Reply) -> None:
        fake = self.server.fake
        model = body.get("model", "fake-model")
        number = next(fake.ids)
        calls = [
            {
                "id": call.get("id") or f"call_fake_{number}_{index}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"] if isinstance(call["arguments"], str)
                    else json.dumps(call["arguments"]),
                },
            }
            for index, call in enumerate(reply.calls)
        ]
        prompt_tokens = _words(_message_text(body.get("messages", [])))
        completion_tokens = _words(reply.content) + sum(_words(c["function"]["arguments"]) + 1 for c in calls)
        usage = reply.usage or {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
        usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
        finish = "tool_calls" if calls else "stop"
        completion_id = f"chatcmpl-fake-{number}"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
            if calls:
                message["tool_calls"] = calls
            self._send_json(200, {
                "id": completion_id, "object": "chat.completion", "created": CREATED, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            })
            return

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": completion_id, "object": "chat.completion.chunk", "created": CREATED, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": word}) for word in re.findall(r"\s*\S+\s*", reply.content)]
        for index, call in enumerate(calls):
            arguments = call["function"]["arguments"]
            middle = len(arguments) // 2
            events.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                 "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            for piece in (arguments[:middle], arguments[middle:]):
                if piece:
                    events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({"id": completion_id, "object": "chat.completion.chunk", "created": CREATED,
                           "model": model, "choices": [], "usage": usage})
        for event in events:
            self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _embeddings(self, body: dict[str, Any]) -> None:
        raw = body.get("input", "")
        inputs = [raw] if isinstance(raw, str) else list(raw)
        texts = [item if isinstance(item, str) else json.dumps(item) for item in inputs]
        dimensions = int(body.get("dimensions") or self.server.fake.embedding_dimensions)
        data = []
        for index, text in enumerate(texts):
            vector = embedding_for(text, dimensions)
            encoded: Any = vector
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(_words(text) for text in texts)
        self._send_json(200, {"object": "list", "data": data, "model": body.get("model", "fake-embedding"),
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def _transcription(self, form: dict[str, Any], reply: Reply | None) -> None:
        text = reply.content if reply is not None else self.server.fake.default_transcription
        response_format = form.get("response_format") or "json"
        if response_format in ("text", "srt", "vtt"):
            self._send_text(200, text)
        elif response_format == "verbose_json":
            self._send_json(200, {"task": "transcribe", "language": form.get("language") or "en",
                                  "duration": 1.0, "text": text, "segments": []})
        else:
            self._send_json(200, {"text": text})


def _parse_multipart(content_type: str, body: bytes) -> dict[str, Any]:
    """Text fields as strings; files as {"filename", "content_type", "size"}."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    form: dict[str, Any] = {}
    if not message.is_multipart():
        return form
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            continue
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is not None:
            form[name] = {"filename": filename, "content_type": part.get_content_type(), "size": len(payload)}
        else:
            form[name] = payload.decode("utf-8", "replace")
    return form


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeOpenAIServer


class FakeOpenAIServer:
    def __init__(
        self,
        *,
        api_key: str | None = None,
        default_text: str = "Hello from the fake server.",
        default_transcription: str = "fake transcription",
        embedding_dimensions: int = 8,
    ) -> None:
        self.api_key = api_key
        self.default_text = default_text
        self.default_transcription = default_transcription
        self.embedding_dimensions = embedding_dimensions
        self.requests: list[RecordedRequest] = []
        self.stopping = threading.Event()
        self.ids = itertools.count(1)
        self._queues: dict[str, deque[Reply]] = {route: deque() for route in ROUTES.values()}
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -------------------------------------------------------------- lifecycle
    def start(self) -> FakeOpenAIServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the server first"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as base_url: `http://127.0.0.1:<port>/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -------------------------------------------------------------- scripting
    def queue(self, *replies: Reply, route: str = "chat") -> None:
        if route not in self._queues:
            raise ValueError(f"Unknown route {route!r}; one of {sorted(self._queues)}")
        with self._lock:
            self._queues[route].extend(replies)

    def next_reply(self, route: str) -> Reply | None:
        with self._lock:
            queue = self._queues[route]
            return queue.popleft() if queue else None

    def pending(self, route: str = "chat") -> int:
        with self._lock:
            return len(self._queues[route])

    # -------------------------------------------------------------- records
    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def requests_to(self, route: str) -> list[RecordedRequest]:
        with self._lock:
            return [request for request in self.requests if request.route == route]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.requests_to("chat")

    def all_bodies(self) -> str:
        """Every request body as text, for "this secret never left" assertions."""
        with self._lock:
            return "\n".join(request.text for request in self.requests)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.requests) >= count:
                    return list(self.requests)
            time.sleep(0.01)
        raise AssertionError(f"expected {count} requests, got {len(self.requests)}")


@pytest.fixture
def fake_openai(settings) -> Iterator[FakeOpenAIServer]:
    """A started fake OpenAI-compatible server; `fake_openai.base_url` goes into a profile's base_url.

    It listens on loopback, so the operator lists 127.0.0.1 for model profiles (the guard's tests prove the
    default, an empty list, refuses it)."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    with FakeOpenAIServer() as server:
        yield server
