"""A local fake of OpenAI's Responses API streamed as server-sent events (`POST /v1/responses`,
`stream: true`), as the Codex CLI speaks it: each scripted turn is a text answer or function calls, streamed
with the real event sequence (response.created, response.output_item.added / .done, response.output_text.delta,
response.completed with the usage).

Codex's side requests (anything that is not /responses) get an empty JSON answer. An empty script answers
"done". Every request is recorded (`server.requests`: path, headers, json). `server.hold` makes each answer
wait until it is set (a task still running for the timeout and stop tests).

Codex signed in with ChatGPT speaks to it too (`sign_in()` makes one): its requests carry the sign-in's access
token as the bearer and its account in `chatgpt-account-id`, their bodies zstd-compressed; `POST /oauth/token`
is the token endpoint Codex refreshes at (`{grant_type: refresh_token, refresh_token, client_id}` → new id,
access and refresh tokens), and, like OpenAI's, a refresh token works once: the one traded is revoked. Once a
sign-in exists, /responses answers 401 to a bearer that is not a live access token of it.
"""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"input_tokens": 150, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 30,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 180}


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
    def bearer(self) -> str:
        return self.headers.get("authorization", "").removeprefix("Bearer ")

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name") or t.get("type")) for t in (self.json or {}).get("tools") or []]

    @property
    def function_outputs(self) -> list[dict[str, Any]]:
        return [i for i in (self.json or {}).get("input") or []
                if isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output")]


def jwt(claims: dict[str, Any]) -> str:
    """An unsigned JWT: Codex reads the claims of its id and access tokens, never checks a signature."""
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.c2ln"


def _unzstd(raw: bytes) -> bytes:
    # Codex compresses a ChatGPT sign-in's request bodies with zstd; Python 3.11 has no zstd module and the
    # project takes no dependency for a fake, so Debian's zstd CLI decodes them.
    return subprocess.run(["zstd", "-d", "-c", "-q"], input=raw, capture_output=True, check=True).stdout


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # the test output stays quiet
        pass

    def do_GET(self) -> None:
        self.server.fake.requests.append(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                         None))
        self._json(404 if "responses" in self.path else 200, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "zstd":
            raw = _unzstd(raw)
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = None
        fake = self.server.fake
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake.requests.append(RecordedRequest(self.path, headers, payload))
        if self.path.split("?")[0].endswith("/oauth/token"):
            self._refresh(payload if isinstance(payload, dict) else {})
            return
        if not self.path.split("?")[0].endswith("/responses") or not isinstance(payload, dict):
            self._json(200, {})
            return
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        if fake.accounts and fake.access.get(bearer) != headers.get("chatgpt-account-id"):
            self._json(401, {"error": {"message": "Your authentication token is not valid.", "type": "invalid_request_error",
                                       "code": "token_invalid"}})
            return
        fake.hold.wait()
        turn = fake.script.popleft() if fake.script else Turn.says("done")
        self._stream(payload, turn)

    def _refresh(self, body: dict[str, Any]) -> None:
        fake = self.server.fake
        with fake.lock:
            account = fake.refresh.pop(str(body.get("refresh_token") or ""), None)  # a refresh token works once
        if body.get("grant_type") != "refresh_token" or account is None:
            self._json(401, {"error": "invalid_grant", "error_description": "The refresh token is invalid or was "
                                                                            "already used."})
            return
        self._json(200, fake.issue(account))

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _items(self, turn: Turn) -> list[dict[str, Any]]:
        ids = self.server.fake.ids
        items: list[dict[str, Any]] = []
        if turn.text:
            items.append({"type": "message", "id": f"msg_{next(ids):04d}", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
        for name, arguments in turn.tool_calls:
            number = next(ids)
            items.append({"type": "function_call", "id": f"fc_{number:04d}", "call_id": f"call_{number:04d}",
                          "name": name, "arguments": json.dumps(arguments), "status": "completed"})
        return items

    def _stream(self, payload: dict[str, Any], turn: Turn) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        fake = self.server.fake
        response = {"id": f"resp_{next(fake.ids):04d}", "object": "response", "status": "in_progress",
                    "model": payload.get("model", "gpt-fake"), "output": []}
        out = [_sse({"type": "response.created", "response": response})]
        items = self._items(turn)
        for index, item in enumerate(items):
            out.append(_sse({"type": "response.output_item.added", "output_index": index, "item": item}))
            if item["type"] == "message":
                out.append(_sse({"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                                 "content_index": 0, "delta": item["content"][0]["text"]}))
            out.append(_sse({"type": "response.output_item.done", "output_index": index, "item": item}))
        out.append(_sse({"type": "response.completed", "response": {
            **response, "status": "completed", "output": items, "usage": dict(USAGE)}}))
        self.wfile.write(b"".join(out))
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeResponsesSSE


class FakeResponsesSSE:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.script: deque[Turn] = deque()
        self.requests: list[RecordedRequest] = []
        self.ids = itertools.count(1)
        self.hold = threading.Event()
        self.hold.set()
        # ChatGPT sign-ins: live refresh token → account, live access token → account, accounts made.
        self.lock = threading.Lock()
        self.refresh: dict[str, str] = {}
        self.access: dict[str, str] = {}
        self.accounts: list[str] = []
        self.tokens = itertools.count(1)
        self._server = _Server((host, 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def issue(self, account: str, *, expired: bool = False) -> dict[str, str]:
        """New id, access and refresh tokens for `account`, the access token live here (an `expired` one's `exp`
        is past, so Codex refreshes before its first request)."""
        number = next(self.tokens)
        exp = int(time.time()) + (-3600 if expired else 3600)
        access = jwt({"exp": exp, "n": number, "https://api.openai.com/auth": {"chatgpt_account_id": account}})
        refresh = f"rt-{account}-{number:03d}-{self.port}"
        with self.lock:
            self.access[access] = account
            self.refresh[refresh] = account
        id_token = jwt({"email": f"{account}@example.com", "exp": exp, "https://api.openai.com/auth": {
            "chatgpt_account_id": account, "chatgpt_plan_type": "plus"}})
        return {"id_token": id_token, "access_token": access, "refresh_token": refresh}

    def sign_in(self, account: str = "acct-1", *, expired: bool = True) -> str:
        """The auth.json `codex login` would write for `account` (its access token expired unless told)."""
        self.accounts.append(account)
        tokens = self.issue(account, expired=expired)
        return json.dumps({"OPENAI_API_KEY": None, "tokens": {**tokens, "account_id": account},
                           "last_refresh": "2026-01-01T00:00:00Z"}, indent=2)

    def refreshes(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.split("?")[0].endswith("/oauth/token")]

    def queue(self, *turns: Turn) -> None:
        self.script.extend(turns)

    def scripted(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.split("?")[0].endswith("/responses") and r.json]

    def start(self) -> FakeResponsesSSE:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.hold.set()
        self._server.shutdown()
        self._server.server_close()
