"""A local fake of three video APIs, as their clients speak them (real HTTP on 127.0.0.1, a thread):

- Google `POST /v1beta/models/{model}:generateContent` (key in `x-goog-api-key`) → the MP4 inline as base64;
- BytePlus ModelArk `POST /api/v3/contents/generations/tasks` (bearer) → `{"id"}`; `GET …/tasks/{id}` →
  `status` queued|running|succeeded|failed|cancelled with `content.video_url` and `duration`; `DELETE
  …/tasks/{id}` cancels a queued task (a running one answers 400 `InvalidAction.TaskNotCancellable`);
- xAI `POST /v1/videos/generations` (bearer) → `{"request_id"}`; `GET /v1/videos/{id}` → `status`
  pending|done|expired with `video.url`, `video.duration`, `video.respect_moderation`;
- Alibaba DashScope `POST /api/v1/services/aigc/video-generation/video-synthesis` (bearer, and `X-DashScope-Async:
  enable`, without which it refuses as the real one does) → `output.task_id`; `GET /api/v1/tasks/{id}` →
  `output.task_status` PENDING|RUNNING|SUCCEEDED|FAILED with `output.video_url` and `usage.video_duration`;
- the providers' storage: `GET /storage/{job}.mp4?X-Signature=…` → the clip, which needs no key (a request to
  it is recorded so a test can prove no key was sent); `expired_storage` answers 403 instead.

A job is scripted before it is submitted: `server.jobs.append(Job(polls=2))` — pending for two status polls,
then done; `Job(polls=None)` never finishes (a slow job); `Job(fail_code=…)` fails. An empty script makes
jobs done at the first poll. Errors use each provider's own envelope with text that must never be shown.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

SMALL_MP4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00\x00\x00\x08free" + b"fake-video"
SECRET_TEXT = "Prompt 'secret plans of bob@example.com' violates the policy for key sk-***42"
TASKS = "/api/v3/contents/generations/tasks"
DASHSCOPE = "/api/v1/services/aigc/video-generation/video-synthesis"


@dataclass
class Job:
    polls: int | None = 0  # status polls answered "pending" before done; None: never done
    fail_code: str = ""
    duration: float = 5.0
    running: bool = False  # BytePlus: running (not cancellable) rather than queued while pending
    submit_status: int = 200
    submit_code: str = ""
    # Filled in by the fake:
    id: str = ""
    provider: str = ""
    cancelled: bool = False
    seen: int = 0


@dataclass
class Recorded:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    json: Any


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

    def _handle(self, method: str) -> None:
        fake = self.server.fake
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        request = Recorded(method, url.path, url.query, {k.lower(): v for k, v in self.headers.items()}, body)
        fake.record(request)
        path = url.path
        if method == "GET" and path.startswith("/storage/"):
            self._storage(fake, path)
        elif method == "POST" and re.fullmatch(r"/v1beta/models/[^/:]+:generateContent", path):
            self._google(fake, request)
        elif path == DASHSCOPE or path.startswith("/api/v1/tasks/"):
            self._dashscope(fake, request)
        elif path == TASKS or path.startswith(TASKS + "/") or path.startswith("/v1/videos"):
            self._jobs(fake, request)
        else:
            self._json(404, {"error": {"message": "no route"}})

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _storage(self, fake: FakeVideoServer, path: str) -> None:
        if fake.expired_storage:
            self._send(403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
                       "application/xml")
            return
        self._send(200, fake.clip, "video/mp4")

    def _google(self, fake: FakeVideoServer, request: Recorded) -> None:
        if request.headers.get("x-goog-api-key") != fake.api_key:
            self._json(400, {"error": {"code": 400, "message": SECRET_TEXT, "status": "INVALID_ARGUMENT", "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}})
            return
        if fake.google_finish != "STOP":
            self._json(200, {"candidates": [{"finishReason": fake.google_finish, "index": 0}]})
            return
        self._json(200, {"candidates": [{"content": {"role": "model", "parts": [
            {"inlineData": {"mimeType": "video/mp4", "data": base64.b64encode(fake.clip).decode()}}]},
            "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 12}})

    def _jobs(self, fake: FakeVideoServer, request: Recorded) -> None:
        byteplus = request.path.startswith(TASKS)
        if request.headers.get("authorization") != f"Bearer {fake.api_key}":
            if byteplus:
                self._json(401, {"error": {"code": "AuthenticationError", "message": SECRET_TEXT}})
            else:
                self._json(401, {"code": "unauthorized", "error": SECRET_TEXT})
            return
        if request.method == "POST":
            self._submit(fake, request, byteplus)
            return
        job = fake.job(request.path.rsplit("/", 1)[-1])
        if job is None:
            self._json(404, {"error": {"code": "ResourceNotFound", "message": "no such task"}})
        elif request.method == "DELETE":
            self._cancel(job)
        else:
            self._status(fake, job, byteplus)

    def _dashscope(self, fake: FakeVideoServer, request: Recorded) -> None:
        if request.headers.get("authorization") != f"Bearer {fake.api_key}":
            self._json(401, {"code": "InvalidApiKey", "message": SECRET_TEXT, "request_id": "r-1"})
            return
        if request.method == "POST":
            if request.headers.get("x-dashscope-async") != "enable":
                self._json(403, {"code": "AccessDenied", "message": "current user api does not support "
                                                                    "synchronous calls", "request_id": "r-2"})
                return
            job = fake.next_job("alibaba")
            if job.submit_status != 200:
                self._json(job.submit_status, {"code": job.submit_code, "message": SECRET_TEXT, "request_id": "r"})
                return
            self._json(200, {"output": {"task_status": "PENDING", "task_id": job.id}, "request_id": "r-3"})
            return
        job = fake.job(request.path.rsplit("/", 1)[-1])
        if job is None:
            self._json(404, {"code": "InvalidParameter", "message": "task not found", "request_id": "r-4"})
            return
        job.seen += 1
        output: dict[str, Any] = {"task_id": job.id}
        body: dict[str, Any] = {"request_id": f"r-{job.seen}", "output": output}
        if job.polls is None or job.seen <= job.polls:
            output["task_status"] = "RUNNING" if job.running else "PENDING"
        elif job.fail_code:
            output.update(task_status="FAILED", code=job.fail_code, message=SECRET_TEXT)
        else:
            output.update(task_status="SUCCEEDED", video_url=f"{fake.url}/storage/{job.id}.mp4?Expires=86400",
                          orig_prompt="...")
            body["usage"] = {"video_duration": job.duration, "video_ratio": "1280*720", "video_count": 1}
        self._json(200, body)

    def _submit(self, fake: FakeVideoServer, request: Recorded, byteplus: bool) -> None:
        job = fake.next_job("byteplus" if byteplus else "xai")
        if job.submit_status != 200:
            self._json(job.submit_status, {"error": {"code": job.submit_code, "message": SECRET_TEXT}})
            return
        self._json(200, {"id": job.id} if byteplus else {"request_id": job.id})

    def _cancel(self, job: Job) -> None:
        if job.provider != "byteplus" or job.running or job.polls == 0:
            self._json(400, {"error": {"code": "InvalidAction.TaskNotCancellable", "message": SECRET_TEXT}})
            return
        job.cancelled = True
        self._json(200, {})

    def _status(self, fake: FakeVideoServer, job: Job, byteplus: bool) -> None:
        job.seen += 1
        pending = job.cancelled is False and (job.polls is None or job.seen <= job.polls)
        video_url = f"{fake.url}/storage/{job.id}.mp4?X-Signature=abc123&X-Expires=3600"
        if byteplus:
            body: dict[str, Any] = {"id": job.id, "model": "seedance", "created_at": 1_780_000_000,
                                    "updated_at": 1_780_000_000 + job.seen}
            if job.cancelled:
                body["status"] = "cancelled"
            elif pending:
                body["status"] = "running" if job.running else "queued"
            elif job.fail_code:
                body.update(status="failed", error={"code": job.fail_code, "message": SECRET_TEXT})
            else:
                body.update(status="succeeded", content={"video_url": video_url}, duration=job.duration,
                            resolution="720p", ratio="16:9", usage={"completion_tokens": 108900})
            self._json(200, body)
            return
        if pending:
            self._json(202, {"status": "pending"})
        elif job.fail_code:
            self._json(200, {"status": "done", "video": {"url": video_url, "duration": job.duration,
                                                         "respect_moderation": False}, "model": "grok-imagine-video"})
        else:
            self._json(200, {"status": "done", "video": {"url": video_url, "duration": job.duration,
                                                         "respect_moderation": True}, "model": "grok-imagine-video"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeVideoServer


@dataclass
class FakeVideoServer:
    api_key: str = "sk-video-key-never-shown-000000000"
    clip: bytes = SMALL_MP4
    google_finish: str = "STOP"
    expired_storage: bool = False
    jobs: list[Job] = field(default_factory=list)
    submitted: list[Job] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: _Server | None = None

    def start(self) -> FakeVideoServer:
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

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def next_job(self, provider: str) -> Job:
        with self._lock:
            job = self.jobs.pop(0) if self.jobs else Job()
            prefix = {"byteplus": "cgt", "alibaba": "0385dc79"}.get(provider, "vid")
            job.id = f"{prefix}-2026{next(self._ids):04d}"
            job.provider = provider
            self.submitted.append(job)
            return job

    def job(self, job_id: str) -> Job | None:
        with self._lock:
            return next((j for j in self.submitted if j.id == job_id), None)

    def to(self, prefix: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith(prefix)]


@pytest.fixture
def fake_video(settings) -> Iterator[FakeVideoServer]:
    """A started fake of the video APIs and their storage; every video provider points at it, loopback is listed
    for model traffic."""
    settings.MODEL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    server = FakeVideoServer().start()
    for provider in ("GOOGLE", "BYTEPLUS", "XAI"):
        setattr(settings, f"GENERATED_MEDIA_{provider}_BASE_URL", server.url)
    settings.GENERATED_MEDIA_ALIBABA_BASE_URL = f"{server.url}/api/v1"  # DashScope's base carries its /api/v1
    try:
        yield server
    finally:
        server.stop()
