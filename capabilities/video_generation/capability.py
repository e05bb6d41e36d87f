"""`generate_video`: make a short clip with the video provider the author chose, optionally from an image.

One call, in this order, so nothing is paid for a clip that could not be kept:
1. the prompt, the resolution (up to the binding's `max_resolution`), the aspect ratio, the duration (up to
   `max_seconds`) and the start image are checked — the model's own mistakes are retries. A start image is the
   filename `generate_image` returned in this run, or a workspace path whose bytes are an image this run made
   (recognised by its digest, never its name): a filename alone never reaches another run's files;
2. the organization's generated-media quota: full → a result;
3. the budget is asked with the clip's price (the catalog's dated price per second at the chosen resolution ×
   the seconds asked, or the model's longest where the model decides): past a cap → a result;
4. the clip is made: Google answers in the request itself; BytePlus, xAI and Alibaba accept a job that is polled every
   few seconds up to `timeout_seconds`. A job past that is cancelled where the provider allows (BytePlus, while
   queued) and recorded at its estimate — the provider may still finish and bill it — and so is one whose run
   is cancelled while it waits;
5. the finished clip is downloaded from the provider's storage URL before it expires, with a client that carries
   no key (`outbound.download`), and recorded at the duration the provider reports (`metered.record`, label
   `video_generation`); a clip that was made but could not be downloaded is recorded too, and said;
6. the clip goes to the generated-media store (and to `/workspace/output` when the run has a workspace).

Failures: a rejected key, a spent budget, a content refusal and a timeout are results (a retry after a refusal
would invite working around it); a rate limit or a provider that is down is a retry. Only the provider's status
and error code are logged or shown, never its text.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_ai import RunContext
from pydantic_ai.tools import Tool, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from agenticos import netguard
from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, KeyRequirement, ToolDecl
from capabilities.video_generation import catalog, clients
from media import metering, outbound, store

logger = logging.getLogger(__name__)

LEDGER_KIND = "video_generation"
MAX_PROMPT = 4000
POLL_SECONDS = 5.0
DOWNLOAD_TIMEOUT = 300.0
CONTENT_POLICY_CODES = frozenset({
    "content_policy_violation", "content_moderation", "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST",
    "InputTextSensitiveContentDetected", "InputImageSensitiveContentDetected",
    "OutputVideoSensitiveContentDetected", "SensitiveContentDetected", "DataInspectionFailed",
    "IPInfringementSuspect"})
# Alibaba Model Studio: the shared DashScope endpoint of a region that has one; every region has workspace
# endpoints (`alibaba_workspace`).
ALIBABA_REGIONS = ("ap-southeast-1", "us-east-1", "eu-central-1", "ap-northeast-1", "cn-beijing", "cn-hongkong")
ALIBABA_SHARED = {"ap-southeast-1": "https://dashscope-intl.aliyuncs.com/api/v1",
                  "us-east-1": "https://dashscope-us.aliyuncs.com/api/v1",
                  "cn-beijing": "https://dashscope.aliyuncs.com/api/v1"}
AlibabaRegion = Literal["ap-southeast-1", "us-east-1", "eu-central-1", "ap-northeast-1", "cn-beijing", "cn-hongkong"]


def _clock() -> float:
    return time.monotonic()


class VideoGenerationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = Field(default="google", json_schema_extra={"enum": catalog.CATALOG.provider_ids()},
                          description="Who renders: Google answers inline; BytePlus, xAI and Alibaba run a job "
                                      "that is polled.")
    model: str = Field(default="gemini-omni-1.1-flash", json_schema_extra={"enum": catalog.CATALOG.model_ids()},
                       description="The video model, from the provider's catalog entries.")
    resolution: str | None = Field(default=None, max_length=16,
                                   description="The usual resolution. Unset: the model's first (lowest).")
    max_resolution: str | None = Field(default=None, max_length=16,
                                       description="The highest the agent may ask for. Unset: any the model "
                                                   "renders (resolution is what a second costs).")
    aspect_ratio: str | None = Field(default=None, max_length=8,
                                     description="The usual aspect ratio. Unset: the model's first.")
    seconds: int | None = Field(default=None, ge=1, le=120,
                                description="The usual length. Unset: 5, or the nearest the model makes. Refused "
                                            "for a model that decides its length.")
    max_seconds: int | None = Field(default=None, ge=1, le=120,
                                    description="The longest clip the agent may ask for. Unset: the model's "
                                                "longest.")
    audio: bool | None = Field(default=None, description="Sound by default. Only where the model makes it "
                                                         "optional.")
    alibaba_workspace: str | None = Field(
        default=None, pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$",
        description="Alibaba only: the Model Studio workspace id (a host label). Unset: the region's shared "
                    "DashScope endpoint.")
    alibaba_region: AlibabaRegion = Field(default="ap-southeast-1", description="Alibaba only: the region.")
    timeout_seconds: int = Field(default=600, ge=60, le=1800,
                                 description="How long a call waits for its clip.")

    @model_validator(mode="after")
    def _fits_the_catalog(self) -> VideoGenerationConfig:
        entry = catalog.provider(self.provider)
        if entry is None:
            raise ValueError(f"provider must be one of {catalog.CATALOG.provider_ids()}")
        found = catalog.model(self.provider, self.model)
        if found is None:
            raise ValueError(f"model must be one of {[m.id for m in entry.models]} for provider {self.provider}")
        for name in ("resolution", "max_resolution"):
            value = getattr(self, name)
            if value is not None and value not in found.resolutions:
                raise ValueError(f"{name} must be one of {found.resolutions} for {self.model}")
        if self.max_resolution and found.resolutions.index(self.max_resolution) < found.resolutions.index(
                self.usual_resolution):
            raise ValueError("max_resolution must be at least resolution")
        if self.aspect_ratio is not None and self.aspect_ratio not in found.aspect_ratios:
            raise ValueError(f"aspect_ratio must be one of {found.aspect_ratios} for {self.model}")
        if found.seconds is None and (self.seconds is not None or self.max_seconds is not None):
            raise ValueError(f"{self.model} decides the length of its clips: leave seconds and max_seconds unset")
        if found.seconds is not None:
            low, high = found.seconds.min, found.seconds.max
            for name in ("seconds", "max_seconds"):
                value = getattr(self, name)
                if value is not None and not low <= value <= high:
                    raise ValueError(f"{name} must be {low}-{high} for {self.model}")
            if self.seconds is not None and not found.seconds.allows(self.seconds):
                raise ValueError(f"seconds must be one of {found.seconds.only} for {self.model}")
            if self.seconds is not None and self.seconds > self.longest_allowed:
                raise ValueError("seconds must be at most max_seconds")
        if self.audio is not None and found.audio != "optional":
            raise ValueError(f"{self.model}'s sound is fixed ({found.audio}): leave audio unset")
        if self.provider != "alibaba" and (self.alibaba_workspace or self.alibaba_region != "ap-southeast-1"):
            raise ValueError("alibaba_workspace and alibaba_region are for provider alibaba only")
        if self.provider == "alibaba" and not self.alibaba_workspace and self.alibaba_region not in ALIBABA_SHARED:
            raise ValueError(f"alibaba_region {self.alibaba_region} has no shared endpoint: set alibaba_workspace")
        return self

    def endpoint(self) -> str:
        """Where this binding's provider is called: the operator's `GENERATED_MEDIA_<PROVIDER>_BASE_URL` when set,
        an Alibaba workspace's own endpoint, a region's shared one, or the catalog's public endpoint."""
        default = self.entry.base_url
        if self.provider == "alibaba":
            default = (f"https://{self.alibaba_workspace}.{self.alibaba_region}.maas.aliyuncs.com/api/v1"
                       if self.alibaba_workspace else ALIBABA_SHARED[self.alibaba_region])
        return outbound.base_url(self.provider, default)

    @property
    def entry(self) -> catalog.ProviderEntry:
        entry = catalog.provider(self.provider)
        assert entry is not None  # validated
        return entry

    @property
    def video_model(self) -> catalog.VideoModel:
        found = catalog.model(self.provider, self.model)
        assert found is not None  # validated
        return found

    @property
    def usual_resolution(self) -> str:
        return self.resolution or self.video_model.resolutions[0]

    def allowed_resolutions(self) -> list[str]:
        resolutions = self.video_model.resolutions
        top = resolutions.index(self.max_resolution) if self.max_resolution else len(resolutions) - 1
        return resolutions[: top + 1]

    @property
    def usual_ratio(self) -> str:
        return self.aspect_ratio or self.video_model.aspect_ratios[0]

    @property
    def longest_allowed(self) -> int:
        return self.max_seconds or self.video_model.longest

    @property
    def usual_seconds(self) -> int | None:
        span = self.video_model.seconds
        if span is None:
            return None
        if self.seconds:
            return self.seconds
        fits = [n for n in (span.only or range(span.min, self.longest_allowed + 1)) if n <= self.longest_allowed]
        return min(fits, key=lambda n: abs(n - 5)) if fits else span.min

    @property
    def usual_audio(self) -> bool:
        found = self.video_model
        if found.audio == "optional":
            return found.audio_default if self.audio is None else self.audio
        return found.audio == "always"


@dataclass
class _VideoState:
    config: VideoGenerationConfig
    reveal: Any


def _state(ctx: RunContext[Any]) -> _VideoState:
    state: _VideoState = ctx.deps.scratch["video_generation"]
    return state


def _workspace_for_output(workspace_id: str | None) -> str | None:
    from capabilities.image_generation.capability import _workspace_for_output as stored_workspace

    return stored_workspace(workspace_id)


def _start_image(run_id: Any, organization_id: Any, workspace_id: str | None,
                 image: str) -> tuple[bytes, str] | None:
    """The bytes and type of an image this run made, named by its filename or found at a workspace path by its
    digest. Sync (ORM, storage)."""
    if store.is_filename(image):
        media = store.made_in_run(run_id, organization_id, filename=image)
        return (store.read(media), media.media_type) if media is not None else None
    if not workspace_id:
        return None
    from workspaces import store as workspace

    try:
        data = workspace.read(workspace_id, image)
    except (OSError, ValueError):
        return None
    media = store.made_in_run(run_id, organization_id, sha256=hashlib.sha256(data).hexdigest())
    return (data, media.media_type) if media is not None else None


def _record(meter: Any, config: VideoGenerationConfig, cost: Decimal) -> None:
    from governance import metered

    metered.record(meter, model=f"{config.provider}:{config.model}", cost=cost, partial=False, chat=False)


def _provider_failure(ctx: RunContext[Any], exc: Exception, *, billed: str = "") -> str:
    """A provider's refusal or fault, before or while a clip was made: only its status and code are shown."""
    refused = netguard.refusal_in(exc)
    if refused is not None:
        return failures.refuse(f"The video provider's address was refused: {refused}")
    if not isinstance(exc, outbound.ProviderError):
        logger.info("generate_video: provider unreachable (%s)", type(exc).__name__)
        return failures.transient(ctx, f"The video provider could not be reached.{billed}")
    logger.info("generate_video: provider answered %s", exc.where)
    if exc.rejected_key or exc.status == 403:
        return failures.refuse(f"The video provider rejected this agent's API key ({exc.where}). Its owner must "
                               "enter a valid key.")
    if exc.code in CONTENT_POLICY_CODES:
        return failures.bad_news(f"The video provider's content policy refused this clip ({exc.where}). Nothing "
                                 "was made; tell the person.")
    if exc.status == 429 or exc.status >= 500:
        return failures.transient(ctx, f"The video provider is busy or down ({exc.where}).{billed}")
    return failures.retry(ctx, f"The video provider refused this request ({exc.where}). Change the prompt or "
                               "the settings and call again.")


@dataclass
class _Asked:
    resolution: str
    aspect_ratio: str
    seconds: int | None
    audio: bool | None


def _check_arguments(ctx: RunContext[Any], prompt: str, resolution: str | None, aspect_ratio: str | None,
                     seconds: int | None, audio: bool | None) -> _Asked | str:
    config = _state(ctx).config
    found = config.video_model
    if not prompt.strip() or len(prompt) > MAX_PROMPT:
        return failures.retry(ctx, f"prompt must describe the clip in 1-{MAX_PROMPT} characters.")
    chosen = resolution or config.usual_resolution
    if chosen not in config.allowed_resolutions():
        return failures.retry(ctx, f"resolution must be one of {config.allowed_resolutions()}.")
    ratio = aspect_ratio or config.usual_ratio
    if ratio not in found.aspect_ratios:
        return failures.retry(ctx, f"aspect_ratio must be one of {found.aspect_ratios}.")
    length = config.usual_seconds if seconds is None else seconds
    if found.seconds is None:
        length = None
    elif length is None or not (found.seconds.allows(length) and length <= config.longest_allowed):
        if found.seconds.only:
            allowed = [n for n in found.seconds.only if n <= config.longest_allowed]
            return failures.retry(ctx, f"seconds must be one of {allowed}.")
        return failures.retry(ctx, f"seconds must be {found.seconds.min}-{config.longest_allowed}.")
    sound = (config.usual_audio if audio is None else audio) if found.audio == "optional" else None
    return _Asked(chosen, ratio, length, sound)


async def generate_video(ctx: RunContext[Any], prompt: str, resolution: str | None = None,
                         aspect_ratio: str | None = None, seconds: int | None = None, audio: bool | None = None,
                         image: str | None = None) -> str | dict[str, Any]:
    """Make a short video clip from a written description, optionally starting from an image.

    Use it when the person asks for a video, an animation or a moving version of an image; for a still picture
    use generate_image. It takes one or several minutes, and it is the most expensive call an agent makes: ask
    only for the length and resolution the person needs.

    Args:
        prompt: What happens in the clip, in detail: subject, action, camera, style, light and sound (1-4000
            characters).
        resolution: The clip's resolution; unset: the agent's usual one. Higher costs more per second.
        aspect_ratio: The clip's shape; unset: the agent's usual one.
        seconds: How long the clip is; unset: the agent's usual length.
        audio: Whether the clip has sound; unset: the agent's usual choice.
        image: Start from this image: the `filename` generate_image returned in this conversation's run, or a
            workspace path of such an image.

    Returns:
        The stored clip: `url` (the person watches it there), `filename`, `name`, `media_type` and, when this
        agent has a workspace, `workspace_path` under /workspace/output; or a sentence saying why no clip was
        made.
    """
    from agents.run_handle import on_db_thread
    from governance import budgets, metered

    asked = _check_arguments(ctx, prompt, resolution, aspect_ratio, seconds, audio)
    if isinstance(asked, str):
        return asked
    state = _state(ctx)
    config, deps = state.config, ctx.deps
    start: tuple[bytes, str] | None = None
    if image:
        if not config.video_model.image_start:
            return failures.retry(ctx, f"{config.model} cannot start from an image: leave image unset.")
        start = await on_db_thread(_start_image, deps.run_id, deps.organization_id, deps.scratch.get("workspace_id"),
                                   image.strip())
        if start is None:
            return failures.retry(ctx, "image must be the filename generate_image returned in this run, or the "
                                       "workspace path of that image.")
    per_second = catalog.rate(config.video_model, asked.resolution, timezone.now().date())
    if per_second is None:  # the catalog changed under a published binding
        return failures.refuse(f"This deployment has no price for {config.model} at {asked.resolution} today.")
    estimate = per_second * (asked.seconds or config.video_model.longest)
    try:
        await on_db_thread(store.check_quota, deps.organization_id)
    except store.QuotaExceeded as exc:
        return failures.refuse(str(exc))
    meter = await on_db_thread(metered.for_run, deps.run_id, deps.organization_id, kind=LEDGER_KIND)
    try:
        await on_db_thread(metering.check_price, meter, estimate)
    except budgets.BudgetExceeded as exc:
        return failures.refuse(metering.refusal(exc, "clip", estimate))
    request = clients.Request(
        base_url=config.endpoint(), entry=config.entry, model=config.video_model, api_key=await on_db_thread(state.reveal), prompt=prompt.strip(),
        resolution=asked.resolution, aspect_ratio=asked.aspect_ratio, seconds=asked.seconds, audio=asked.audio,
        image=start, timeout_seconds=config.timeout_seconds)
    made = await (_inline(ctx, request, meter, estimate) if config.entry.api == "gemini-inline"
                  else _polled(ctx, request, meter, estimate))
    if isinstance(made, str):
        return made
    data, duration = made
    cost = per_second * Decimal(str(duration))
    await on_db_thread(_record, meter, config, cost)
    if data[4:8] != b"ftyp":
        return failures.bad_news("The video provider's answer was not an MP4 clip. It was billed; nothing was "
                                 "stored.")
    workspace_id = await on_db_thread(_workspace_for_output, deps.scratch.get("workspace_id"))
    media = await on_db_thread(
        store.save, organization_id=deps.organization_id, run_id=deps.run_id, conversation_id=deps.conversation_id,
        kind="video", data=data, media_type="video/mp4", name=store.display_name("video", prompt),
        provider=config.provider, model=config.model, workspace_id=workspace_id)
    result: dict[str, Any] = store.file_entry(media)
    if media.workspace_path:
        result["workspace_path"] = media.workspace_path
    return result


async def _record_estimate(meter: Any, config: VideoGenerationConfig, estimate: Decimal) -> None:
    from agents.run_handle import on_db_thread

    await asyncio.shield(on_db_thread(_record, meter, config, estimate))


async def _inline(ctx: RunContext[Any], request: clients.Request, meter: Any,
                  estimate: Decimal) -> tuple[bytes, float] | str:
    """Google: the clip in the answer. It reports no duration, so it is billed at the model's longest."""
    config = _state(ctx).config
    try:
        clip = await clients.generate_inline(request)
    except asyncio.CancelledError:
        await _record_estimate(meter, config, estimate)
        raise
    except outbound.Timeout:
        await _record_estimate(meter, config, estimate)
        logger.info("generate_video: the provider timed out")
        return failures.bad_news(f"The video provider did not answer within {config.timeout_seconds} seconds. It "
                                 f"may still bill the clip, so it was recorded at its estimate (${estimate:.2f}); "
                                 "nothing was stored.")
    except Exception as exc:  # noqa: BLE001  (every provider failure is routed by _provider_failure)
        return _provider_failure(ctx, exc)
    return clip.data, float(config.video_model.longest)


async def _polled(ctx: RunContext[Any], request: clients.Request, meter: Any,
                  estimate: Decimal) -> tuple[bytes, float] | str:
    config = _state(ctx).config
    try:
        job = await clients.submit(request)
    except asyncio.CancelledError:
        await _record_estimate(meter, config, estimate)
        raise
    except Exception as exc:  # noqa: BLE001
        return _provider_failure(ctx, exc)
    try:
        status = await _wait(request, job, deadline=_clock() + config.timeout_seconds)
    except asyncio.CancelledError:
        await asyncio.shield(_give_up(request, job))
        await _record_estimate(meter, config, estimate)
        raise
    except Exception as exc:  # noqa: BLE001  (a status request the provider refused: the job may still bill)
        await _record_estimate(meter, config, estimate)
        return _provider_failure(ctx, exc, billed=f" The job may still finish and bill, so it was recorded at its "
                                                  f"estimate (${estimate:.2f}).")
    if status is None:
        cancelled = await _give_up(request, job)
        await _record_estimate(meter, config, estimate)
        logger.info("generate_video: job timed out (cancelled: %s)", cancelled)
        what = ("It was cancelled at the provider" if cancelled else
                "The provider may still finish it and bill it")
        return failures.bad_news(f"The video was not ready within {config.timeout_seconds} seconds. {what}; it "
                                 f"was recorded at its estimate (${estimate:.2f}). Nothing was stored.")
    if status.state == "failed":
        return _provider_failure(ctx, outbound.ProviderError(200, status.code))
    duration = status.duration if status.duration is not None else float(request.seconds or 0)
    try:
        data = await outbound.download(status.url, timeout=DOWNLOAD_TIMEOUT)
    except Exception as exc:  # noqa: BLE001  (a made clip that could not be fetched is still billed)
        per_second = estimate / Decimal(request.seconds or config.video_model.longest)
        await _record_estimate(meter, config, per_second * Decimal(str(duration)))
        where = exc.where if isinstance(exc, outbound.ProviderError) else type(exc).__name__
        logger.info("generate_video: the finished clip could not be downloaded (%s)", where)
        return failures.bad_news(f"The clip was made but could not be downloaded ({where}). It was billed; nothing "
                                 "was stored. Calling again would make and bill a new clip.")
    return data, duration


async def _wait(request: clients.Request, job: str, *, deadline: float) -> clients.Status | None:
    """Poll a job until it is done or failed, or None once `deadline` passes. A busy status endpoint is asked
    again at the next poll."""
    while True:
        try:
            status = await clients.status(request, job)
            if status.state != "pending":
                return status
        except outbound.Timeout:
            pass
        except outbound.ProviderError as exc:
            if not (exc.status == 429 or exc.status >= 500):
                raise
        if _clock() >= deadline:
            return None
        await asyncio.sleep(POLL_SECONDS)


async def _give_up(request: clients.Request, job: str) -> bool:
    return await clients.cancel(request, job) if request.entry.can_cancel else False


def _prepare(config: VideoGenerationConfig) -> Any:
    """The arguments as this binding allows them: enums with the usual values as defaults; seconds, audio and
    image only where the model takes them."""

    async def prepare(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
        found = config.video_model
        schema = dict(tool_def.parameters_json_schema)
        properties = dict(schema.get("properties") or {})
        properties["resolution"] = {"type": "string", "enum": config.allowed_resolutions(),
                                    "default": config.usual_resolution,
                                    "description": "The clip's resolution; higher costs more per second."}
        properties["aspect_ratio"] = {"type": "string", "enum": found.aspect_ratios, "default": config.usual_ratio,
                                      "description": "The clip's shape."}
        if found.seconds is None:
            properties.pop("seconds", None)
        else:
            properties["seconds"] = {"type": "integer", "minimum": found.seconds.min,
                                     "maximum": config.longest_allowed, "default": config.usual_seconds,
                                     "description": "How long the clip is, in seconds."}
            if found.seconds.only:
                properties["seconds"]["enum"] = [n for n in found.seconds.only if n <= config.longest_allowed]
        if found.audio != "optional":
            properties.pop("audio", None)
        else:
            properties["audio"] = {"type": "boolean", "default": config.usual_audio,
                                   "description": "Whether the clip has sound."}
        if not found.image_start:
            properties.pop("image", None)
        schema["properties"] = properties
        return replace(tool_def, parameters_json_schema=schema)

    return prepare


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, VideoGenerationConfig)
    assert ctx.secret_value is not None  # the registry skips a binding without its key before build
    ctx.deps.scratch["video_generation"] = _VideoState(ctx.config, ctx.secret_value)
    return [FunctionToolset([Tool(generate_video, prepare=_prepare(ctx.config))], max_retries=1)]


CAPABILITY = Capability(
    id="video_generation",
    name="Video generation",
    category="analysis",
    description="Makes short video clips from a written description or an image, with the provider you choose.",
    offers="making short video clips (animations, product shots) from a description or an image",
    examples=(
        "Make a five-second clip of waves rolling onto a beach at sunset.",
        "Animate the logo you just drew so it spins slowly.",
        "Turn this product photo into a short turntable video.",
    ),
    never_does=(
        "It never renders once the organization's generated files fill their quota or the clip's price would pass "
        "a budget, never above the binding's highest resolution or longest length, and never sends the key to the "
        "host the clip is downloaded from."
    ),
    tools=(ToolDecl.from_function(generate_video, side_effecting=True),),
    key=KeyRequirement(kind="api_key",
                       description="The video provider's API key (Google, BytePlus, xAI or Alibaba Cloud)"),
    config_model=VideoGenerationConfig,
    voice="hand_off",
    build=build,
)
