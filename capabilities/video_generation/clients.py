"""Each video provider's own HTTP API, reduced to: a clip answered inline, or a job submitted, polled, cancelled.

- Google `POST /v1beta/models/{model}:generateContent` with `responseModalities: ["VIDEO"]` (key in
  `x-goog-api-key`): the clip comes back inline as base64 MP4, in the request itself.
- BytePlus ModelArk `POST /api/v3/contents/generations/tasks` (bearer key; the prompt carries the
  `--resolution/--ratio/--duration` commands, a start image rides as an `image_url` content item) →
  `{"id"}`; `GET …/tasks/{id}` → `status` queued|running|succeeded|failed|cancelled with `content.video_url`
  and `duration`; `DELETE …/tasks/{id}` cancels a job that is still queued.
- xAI `POST /v1/videos/generations` (bearer key) → `{"request_id"}`; `GET /v1/videos/{id}` → `status`
  pending|done|expired|failed with `video.url` and `video.duration`. No cancellation is documented.
- Alibaba Cloud Model Studio (DashScope) `POST {base}/services/aigc/video-generation/video-synthesis` with
  `X-DashScope-Async: enable` (bearer key; `input.prompt`, `parameters.size` as `W*H`, `duration`, `audio`) →
  `output.task_id`; `GET {base}/tasks/{id}` → `output.task_status` PENDING|RUNNING|SUCCEEDED|FAILED|CANCELED|
  UNKNOWN with `output.video_url` and `usage.video_duration`. `base` is the shared endpoint of the region or the
  account's workspace endpoint (`https://{workspace}.{region}.maas.aliyuncs.com/api/v1`). No cancellation is
  documented.

A provider's refusal is raised as `outbound.ProviderError` (status and code, never its text), a request that
timed out as `outbound.Timeout`; a refused address propagates as the guard's `netguard.Refused`.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from capabilities.video_generation.catalog import ProviderEntry, VideoModel
from media import outbound

REQUEST_TIMEOUT = 30.0  # one submit, status or cancel request (the clip itself is waited for by polling)


@dataclass
class Request:
    base_url: str  # the provider's endpoint for this binding (the operator's override, a workspace's, or public)
    entry: ProviderEntry
    model: VideoModel
    api_key: str
    prompt: str
    resolution: str
    aspect_ratio: str
    seconds: int | None
    audio: bool | None
    image: tuple[bytes, str] | None  # (bytes, media type) of the start image
    timeout_seconds: int


@dataclass
class Status:
    """Where a job is: `pending`, `done` (with its URL and the duration the provider reports) or `failed`."""

    state: str
    url: str = ""
    duration: float | None = None
    code: str = ""


@dataclass
class Clip:
    data: bytes


def _data_uri(image: tuple[bytes, str]) -> str:
    return f"data:{image[1]};base64,{base64.b64encode(image[0]).decode()}"


async def _call(request: Request, method: str, path: str, *, headers: dict[str, str], json: Any = None,
                timeout: float = REQUEST_TIMEOUT) -> Any:
    base = request.base_url
    async with outbound.api_client(base, timeout=timeout) as client:
        try:
            response = await client.request(method, f"{base}{path}", headers=headers, json=json)
        except Exception as exc:
            if outbound.is_timeout(exc):
                raise outbound.Timeout() from exc
            raise
    outbound.raise_for(response)
    return response


def _bearer(request: Request) -> dict[str, str]:
    return {"Authorization": f"Bearer {request.api_key}"}


# ------------------------------------------------------------------ Google: inline


async def generate_inline(request: Request) -> Clip:
    parts: list[dict[str, Any]] = [{"text": request.prompt}]
    if request.image is not None:
        parts.append({"inlineData": {"mimeType": request.image[1],
                                     "data": base64.b64encode(request.image[0]).decode()}})
    response = await _call(
        request, "POST", f"/v1beta/models/{request.model.id}:generateContent",
        headers={"x-goog-api-key": request.api_key}, timeout=request.timeout_seconds,
        json={"contents": [{"role": "user", "parts": parts}],
              "generationConfig": {"responseModalities": ["VIDEO"], "videoConfig": {
                  "aspectRatio": request.aspect_ratio, "resolution": request.resolution}}})
    body = response.json()
    try:
        found = body["candidates"][0]["content"]["parts"]
        data = next(p["inlineData"]["data"] for p in found if "inlineData" in p)
        return Clip(base64.b64decode(data, validate=True))
    except (KeyError, IndexError, TypeError, StopIteration, binascii.Error, ValueError):
        candidates = (body.get("candidates") if isinstance(body, dict) else None) or [{}]
        reason = str((candidates[0] or {}).get("finishReason")
                     or ((body.get("promptFeedback") or {}).get("blockReason") if isinstance(body, dict) else "")
                     or "no_video")
        raise outbound.ProviderError(200, reason) from None


# ------------------------------------------------------------------ BytePlus: tasks


def _byteplus_text(request: Request) -> str:
    commands = [f"--resolution {request.resolution}", f"--ratio {request.aspect_ratio}"]
    if request.seconds is not None:
        commands.append(f"--duration {request.seconds}")
    return f"{request.prompt} {' '.join(commands)}"


TASKS = "/api/v3/contents/generations/tasks"


async def _byteplus_submit(request: Request) -> str:
    content: list[dict[str, Any]] = [{"type": "text", "text": _byteplus_text(request)}]
    if request.image is not None:
        content.append({"type": "image_url", "image_url": {"url": _data_uri(request.image)}})
    response = await _call(request, "POST", TASKS, headers=_bearer(request),
                           json={"model": request.model.id, "content": content})
    return str(response.json()["id"])


async def _byteplus_status(request: Request, job: str) -> Status:
    body = (await _call(request, "GET", f"{TASKS}/{job}", headers=_bearer(request))).json()
    state = body.get("status")
    if state == "succeeded":
        duration = body.get("duration")
        return Status("done", url=str((body.get("content") or {}).get("video_url") or ""),
                      duration=float(duration) if duration is not None else None)
    if state in ("failed", "cancelled", "expired"):
        return Status("failed", code=str((body.get("error") or {}).get("code") or state))
    return Status("pending")


async def _byteplus_cancel(request: Request, job: str) -> bool:
    try:
        await _call(request, "DELETE", f"{TASKS}/{job}", headers=_bearer(request))
    except (outbound.ProviderError, outbound.Timeout):
        return False  # running already (only a queued job can be cancelled), or the provider did not answer
    return True


# ------------------------------------------------------------------ xAI: videos


async def _xai_submit(request: Request) -> str:
    body: dict[str, Any] = {"model": request.model.id, "prompt": request.prompt,
                            "aspect_ratio": request.aspect_ratio, "resolution": request.resolution}
    if request.seconds is not None:
        body["duration"] = request.seconds
    if request.image is not None:
        body["image"] = {"url": _data_uri(request.image)}
    response = await _call(request, "POST", "/v1/videos/generations", headers=_bearer(request), json=body)
    return str(response.json()["request_id"])


async def _xai_status(request: Request, job: str) -> Status:
    body = (await _call(request, "GET", f"/v1/videos/{job}", headers=_bearer(request))).json()
    state = body.get("status")
    if state == "done":
        video = body.get("video") or {}
        if video.get("respect_moderation") is False:
            return Status("failed", code="content_moderation")
        duration = video.get("duration")
        return Status("done", url=str(video.get("url") or ""),
                      duration=float(duration) if duration is not None else None)
    if state in ("expired", "failed"):
        return Status("failed", code=str((body.get("error") or {}).get("code") or state))
    return Status("pending")


async def _no_cancel(request: Request, job: str) -> bool:
    return False


# ------------------------------------------------------------------ Alibaba: DashScope tasks

# Wan's `size` is width*height: the resolution's height at the aspect ratio.
DASHSCOPE_SIZES = {
    ("480p", "16:9"): "832*480", ("480p", "9:16"): "480*832", ("480p", "1:1"): "624*624",
    ("720p", "16:9"): "1280*720", ("720p", "9:16"): "720*1280", ("720p", "1:1"): "960*960",
    ("1080p", "16:9"): "1920*1080", ("1080p", "9:16"): "1080*1920", ("1080p", "1:1"): "1440*1440",
}


async def _dashscope_submit(request: Request) -> str:
    size = DASHSCOPE_SIZES.get((request.resolution, request.aspect_ratio))
    if size is None:
        raise outbound.ProviderError(400, "unsupported_size")
    parameters: dict[str, Any] = {"size": size}
    if request.seconds is not None:
        parameters["duration"] = request.seconds
    if request.audio is not None:
        parameters["audio"] = request.audio
    response = await _call(request, "POST", "/services/aigc/video-generation/video-synthesis",
                           headers={**_bearer(request), "X-DashScope-Async": "enable"},
                           json={"model": request.model.id, "input": {"prompt": request.prompt},
                                 "parameters": parameters})
    return str(response.json()["output"]["task_id"])


async def _dashscope_status(request: Request, job: str) -> Status:
    body = (await _call(request, "GET", f"/tasks/{job}", headers=_bearer(request))).json()
    output = body.get("output") or {}
    state = output.get("task_status")
    if state == "SUCCEEDED":
        duration = (body.get("usage") or {}).get("video_duration")
        return Status("done", url=str(output.get("video_url") or ""),
                      duration=float(duration) if duration is not None else None)
    if state in ("FAILED", "CANCELED", "UNKNOWN"):
        return Status("failed", code=str(output.get("code") or state))
    return Status("pending")


SUBMIT = {"byteplus-tasks": _byteplus_submit, "xai-videos": _xai_submit, "dashscope-tasks": _dashscope_submit}
STATUS = {"byteplus-tasks": _byteplus_status, "xai-videos": _xai_status, "dashscope-tasks": _dashscope_status}
CANCEL = {"byteplus-tasks": _byteplus_cancel, "xai-videos": _no_cancel, "dashscope-tasks": _no_cancel}


async def submit(request: Request) -> str:
    return await SUBMIT[request.entry.api](request)


async def status(request: Request, job: str) -> Status:
    return await STATUS[request.entry.api](request, job)


async def cancel(request: Request, job: str) -> bool:
    return await CANCEL[request.entry.api](request, job)
