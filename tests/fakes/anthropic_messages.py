"""A local fake of Anthropic's Messages API (`POST /v1/messages`, streamed as server-sent events), as Claude
Code speaks it: each scripted turn is a text answer or tool calls (`tool_use` blocks), streamed with the real
event sequence (message_start, content_block_start/delta/stop, message_delta with the stop reason and usage,
message_stop).

Only requests that offer tools take a scripted turn: the CLI's side requests (a title, a quota probe) have none
and are answered "ok", so a script is the conversation and nothing else. An empty script answers "done".
Every request is recorded (`server.requests`: path, headers, json). `server.hold` makes each scripted answer
wait until it is set (a task still running for the timeout and stop tests).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"input_tokens": 100, "output_tokens": 20}


@dataclass
class Turn:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @classmethod
    def says(cls, text: str) -> Turn:
        return cls(text=text)

    @classmethod
    def calls(cls, name: str, arguments: dict[str, Any], *, text: str = "") -> Turn:
        return cls(text=text, tool_calls=[(name, arguments)])


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def api_key(self) -> str:
        return self.headers.get("x-api-key", "") or self.headers.get("authorization", "").removeprefix("Bearer ")

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        found = []
        for message in (self.json or {}).get("messages") or []:
            content = message.get("content")
            if isinstance(content, list):
                found.extend(b for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
        return found


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # the test output stays quiet
        pass

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = None
        fake = self.server.fake
        fake.requests.append(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, payload))
        if not self.path.split("?")[0].endswith("/v1/messages") or not isinstance(payload, dict):
            self._json(200, {"input_tokens": 10} if "count_tokens" in self.path else {})
            return
        turn = Turn.says("ok")
        if payload.get("tools"):
            fake.hold.wait()
            turn = fake.script.popleft() if fake.script else Turn.says("done")
        if payload.get("stream"):
            self._stream(payload, turn)
        else:
            self._json(200, self._message(payload, turn))

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _blocks(self, turn: Turn) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        for name, arguments in turn.tool_calls:
            blocks.append({"type": "tool_use", "id": f"toolu_{next(self.server.fake.ids):04d}", "name": name,
                           "input": arguments})
        return blocks

    def _message(self, payload: dict[str, Any], turn: Turn) -> dict[str, Any]:
        return {"id": f"msg_{next(self.server.fake.ids):04d}", "type": "message", "role": "assistant",
                "model": payload.get("model", "claude-fake"), "content": self._blocks(turn),
                "stop_reason": "tool_use" if turn.tool_calls else "end_turn", "stop_sequence": None,
                "usage": dict(USAGE)}

    def _stream(self, payload: dict[str, Any], turn: Turn) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        message = self._message(payload, turn)
        out = [_sse("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None,
            "usage": {"input_tokens": USAGE["input_tokens"], "output_tokens": 1}}})]
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                out.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                        "content_block": {"type": "text", "text": ""}}))
                out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                        "delta": {"type": "text_delta", "text": block["text"]}}))
            else:
                out.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                        "content_block": {**block, "input": {}}}))
                out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
            out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        out.append(_sse("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": USAGE["output_tokens"]}}))
        out.append(_sse("message_stop", {"type": "message_stop"}))
        self.wfile.write(b"".join(out))
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAnthropic


class FakeAnthropic:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.script: deque[Turn] = deque()
        self.requests: list[RecordedRequest] = []
        self.ids = itertools.count(1)
        self.hold = threading.Event()
        self.hold.set()
        self._server = _Server((host, 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *turns: Turn) -> None:
        self.script.extend(turns)

    def scripted(self) -> list[RecordedRequest]:
        return [r for r in self.requests if isinstance(r.json, dict) and r.json.get("tools")]

    def start(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.hold.set()
        self._server.shutdown()
        self._server.server_close()


def running() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic().start()
    try:
        yield fake
    finally:
        fake.stop()
