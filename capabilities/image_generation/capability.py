"""`generate_image`: draw with a dedicated image model, whatever model the agent itself runs on.

One call, in this order, so nothing is paid for an image that could not be kept:
1. the prompt is checked (empty or too long: a retry, the model's own mistake);
2. the organization's generated-media quota (`generated_media.store.check_quota`): full → a result;
3. the run's budget caps (`governance.metered.check`, the one metered path): used up → a result;
4. the image model runs as a sub-request of the run with `ImageGenerationTool`, through the outbound guard
   (`netguard.PinnedTransport`, `MODEL_ALLOWED_PRIVATE_HOSTS`), with the binding's sealed key: OpenAI is
   `OpenAIResponsesModel` (the catalog's caller model calls the tool; the chosen image model travels as the
   tool's `model`) on `GENERATED_MEDIA_OPENAI_BASE_URL`; Google is `GoogleModel` on the Gemini image model
   itself (generateContent answering with an inline image), on `GENERATED_MEDIA_GOOGLE_BASE_URL` when set;
5. the response is written to the ledger (`metered.record`, label `image_generation`): the tokens priced by
   genai-prices plus the catalog's dated per-image price (Google: the per-image price stands for the output
   tokens, which are the image); without one the image is recorded at zero and the run's cost marked partial;
6. the image goes to the generated-media store (and to `/workspace/output` when the run has a stored
   workspace) and the tool returns its URL.

Failures (the catalog's rule): a rejected key, a content-policy refusal, a timeout, a full quota and a spent
budget are results; a rate limit or a provider that is down is a retry. Only the provider's status and error
code are logged or shown, never its error text (it may quote the prompt or the key's owner).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from django.conf import settings
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_ai import RunContext

from agenticos import netguard
from capabilities import failures
from capabilities.base import (
    BuildContext,
    Built,
    Capability,
    KeyRequirement,
    ToolDecl,
    function_toolset,
)
from capabilities.image_generation import catalog
from media import store

logger = logging.getLogger(__name__)

LEDGER_KIND = "image_generation"
MAX_PROMPT = 4000
TIMEOUT_SECONDS = 180
CONTENT_POLICY_CODES = frozenset({"moderation_blocked", "content_policy_violation", "content_filter"})
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
# An SDK prefix of the old single-string form ("openai-responses:gpt-5.4") → the catalog's provider id.
OLD_PREFIXES = {"openai-responses": "openai", "openai": "openai"}




class ImageGenerationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = Field(default="openai", json_schema_extra={"enum": catalog.CATALOG.provider_ids()},
                          description="Who draws the images: the providers that can.")
    model: str = Field(default="gpt-image-2", json_schema_extra={"enum": catalog.CATALOG.model_ids()},
                       description="The image model, from the provider's catalog entries.")
    quality: Literal["low", "medium", "high", "auto"] | None = Field(
        default=None, description="Unset: the provider's default.")
    size: Literal["auto", "1024x1024", "1024x1536", "1536x1024", "512", "1K", "2K", "4K"] | None = Field(
        default=None, description="Unset: the provider's default. Which sizes a provider draws is in its catalog.")
    background: Literal["transparent", "opaque", "auto"] | None = Field(
        default=None, description="transparent needs png or webp.")
    output_format: Literal["png", "webp", "jpeg"] | None = Field(default=None, description="Unset: png.")
    aspect_ratio: Literal["21:9", "16:9", "4:3", "3:2", "1:1", "9:16", "3:4", "2:3", "5:4", "4:5"] | None = Field(
        default=None, description="Unset: the provider's default. Which ratios a provider draws is in its catalog.")

    @model_validator(mode="before")
    @classmethod
    def _old_single_string(cls, data: Any) -> Any:
        """A spec stored before the pair kept one SDK-prefixed string ("openai-responses:gpt-5.4"): the prefix
        names the provider, and a caller's name instead of an image model resolves to the provider's first
        image model. Only when no provider was stored: a binding naming one declares both halves."""
        if not isinstance(data, dict) or data.get("provider") or ":" not in str(data.get("model") or ""):
            return data
        prefix, name = str(data["model"]).split(":", 1)
        provider_id = OLD_PREFIXES.get(prefix, prefix)
        entry = catalog.provider(provider_id)
        if entry is None:
            return {**data, "provider": provider_id}  # the check below names the unknown provider
        known = catalog.model(provider_id, name)
        return {**data, "provider": provider_id, "model": known.id if known else entry.models[0].id}

    @model_validator(mode="after")
    def _fits_the_catalog(self) -> ImageGenerationConfig:
        entry = catalog.provider(self.provider)
        if entry is None:
            raise ValueError(f"provider must be one of {catalog.CATALOG.provider_ids()}")
        if catalog.model(self.provider, self.model) is None:
            raise ValueError(f"model must be one of {[m.id for m in entry.models]} for provider {self.provider}")
        if self.size is not None and self.size not in entry.sizes:
            raise ValueError(f"size must be one of {entry.sizes} for provider {self.provider}")
        if self.aspect_ratio is not None and self.aspect_ratio not in entry.aspect_ratios:
            raise ValueError(f"aspect_ratio must be one of {entry.aspect_ratios} for provider {self.provider}")
        ignored = [name for name in catalog.OPTIONS if getattr(self, name) is not None and name not in entry.options]
        if ignored:
            raise ValueError(f"provider {self.provider} does not apply {', '.join(ignored)}; it takes only "
                             f"{entry.options}")
        # OpenAI's size is the shape too; Gemini's is the resolution and combines with a ratio.
        if entry.model_class == "openai-responses" and self.aspect_ratio and self.size not in (None, "auto"):
            raise ValueError("set size or aspect_ratio, not both")
        if self.background == "transparent" and self.output_format == "jpeg":
            raise ValueError("a transparent background needs output_format png or webp")
        return self


@dataclass
class _ImageState:
    config: ImageGenerationConfig
    reveal: Any


def _image_tool(config: ImageGenerationConfig, entry: catalog.ProviderEntry) -> Any:
    from pydantic_ai.native_tools import ImageGenerationTool

    # Google's image model is the request's model itself, not a tool option.
    options: dict[str, Any] = {"model": config.model} if entry.model_class == "openai-responses" else {}
    for name in ("quality", "background", "output_format", "size", "aspect_ratio"):
        value = getattr(config, name)
        if value is not None:
            options[name] = value
    return ImageGenerationTool(**options)


def build_model(entry: catalog.ProviderEntry, api_key: str, model_id: str = "") -> tuple[Any, Any]:
    """(model, its HTTP client) for one call. The key goes to the operator's base URL only, through the guard;
    the SDK's own retries are off (a retry is the model's decision, and each one could be billed)."""
    from agents.providers import guarded_http_client

    if entry.model_class == "google":
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        # google-genai retries only when given retry options; none are.
        google_url = settings.GENERATED_MEDIA_GOOGLE_BASE_URL or GEMINI_BASE_URL
        client = guarded_http_client(google_url)
        provider = GoogleProvider(api_key=api_key, base_url=google_url, http_client=client)
        return GoogleModel(model_id, provider=provider), client

    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    base_url = settings.GENERATED_MEDIA_OPENAI_BASE_URL
    client = guarded_http_client(base_url)
    sdk = OpenAIProvider(base_url=base_url, api_key=api_key, http_client=client).client.with_options(max_retries=0)
    return OpenAIResponsesModel(entry.caller, provider=OpenAIProvider(openai_client=sdk)), client


def _workspace_for_output(workspace_id: str | None) -> str | None:
    """The run's workspace: its stored files are the truth on both backends (a service sandbox copies the rows
    written since its last command before the next one, workspaces/service.py)."""
    from workspaces.models import Workspace

    if not workspace_id:
        return None
    return workspace_id if Workspace.objects.filter(pk=workspace_id).exists() else None


def _cost(response: Any, config: ImageGenerationConfig, images: int) -> tuple[Decimal, bool]:
    import dataclasses

    from governance.pricing import price

    provider = catalog.provider(config.provider)
    entry = catalog.model(config.provider, config.model)
    size = config.size or (provider.default_size if provider else "") or None
    each = catalog.image_price(entry, quality=config.quality, size=size, on=timezone.now().date()) if entry else None
    if images and each is None:
        return price(response, free=False)[0], True
    if images and provider is not None and provider.price_covers_output:
        # The image is the output tokens: priced once, by the catalog, at the image rate.
        response = dataclasses.replace(response, usage=dataclasses.replace(response.usage, output_tokens=0))
    tokens, partial = price(response, free=False)
    return tokens + (each or Decimal("0")) * images, partial


def _record(meter: Any, response: Any, config: ImageGenerationConfig, images: int) -> None:
    from governance import metered

    cost, partial = _cost(response, config, images)
    usage = response.usage
    metered.record(meter, model=f"{config.provider}:{config.model}", cost=cost, partial=partial,
                   input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0, chat=False)


def _failure(ctx: RunContext[Any], exc: Exception) -> str:
    """How a provider error reaches the model: only its status and code, never its text."""
    from pydantic_ai.exceptions import ModelAuthenticationError, ModelHTTPError

    refused = netguard.refusal_in(exc)
    if refused is not None:
        return failures.refuse(f"The image provider's address was refused: {refused}")
    if isinstance(exc, ModelHTTPError):
        body = exc.body if isinstance(exc.body, dict) else {}
        code = str(exc.provider_error_code or body.get("code") or "")
        logger.info("generate_image: provider answered HTTP %s (code %s)", exc.status_code, code or "none")
        where = f"HTTP {exc.status_code}{f', code {code}' if code else ''}"
        # Gemini answers a bad key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID): the SDK's category says so.
        if exc.status_code in (401, 403) or isinstance(exc, ModelAuthenticationError):
            return failures.refuse(f"The image provider rejected this agent's API key ({where}). Its owner must "
                                   "enter a valid key.")
        if code in CONTENT_POLICY_CODES:
            return failures.bad_news(f"The image provider's content policy refused this description ({where}). "
                                     "Nothing was drawn; tell the person.")
        if exc.status_code == 429 or exc.status_code >= 500:
            return failures.transient(ctx, f"The image provider is busy or down ({where}).")
        return failures.bad_news(f"The image provider refused the request ({where}). Nothing was drawn.")
    chain = [exc, exc.__cause__, exc.__context__]
    if any(link is not None and "timeout" in type(link).__name__.lower() for link in chain):
        logger.info("generate_image: the provider timed out")
        return failures.bad_news(f"The image provider did not answer within {TIMEOUT_SECONDS} seconds. Nothing "
                                 "was drawn.")
    logger.info("generate_image: provider unreachable (%s)", type(exc).__name__)
    return failures.transient(ctx, "The image provider could not be reached.")


async def generate_image(ctx: RunContext[Any], prompt: str) -> str | dict[str, Any]:
    """Draw an image from a written description, with a dedicated image model.

    Use it for illustrations, pictures, logos, scenes and mock-ups a person asks for; for charts of numbers use
    create_chart instead. Each call costs real money and is stored in the organization's generated files.

    Args:
        prompt: What to draw, in detail: subject, style, composition, colours and any text that must appear
            in the image (1-4000 characters).

    Returns:
        The stored image: `url` (shown to the person), `filename` (names this image in a later tool of this
        run), `name`, `media_type` and, when this agent has a workspace, `workspace_path` under
        /workspace/output; or a sentence saying why nothing was drawn.
    """
    from pydantic_ai.direct import model_request
    from pydantic_ai.messages import BinaryImage, FilePart, ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters

    # The runner's own ORM threads (sized by RUN_DB_THREADS, connections handed back to the pool), not asgiref's
    # single thread every run on the loop would queue behind.
    from agenticos import images as images_module
    from agents.run_handle import on_db_thread
    from governance import budgets, metered

    state: _ImageState = ctx.deps.scratch["image_generation"]
    deps = ctx.deps
    text = prompt.strip()
    if not text or len(text) > MAX_PROMPT:
        return failures.retry(ctx, f"prompt must describe the image in 1-{MAX_PROMPT} characters.")
    try:
        await on_db_thread(store.check_quota, deps.organization_id)
    except store.QuotaExceeded as exc:
        return failures.refuse(str(exc))
    meter = await on_db_thread(metered.for_run, deps.run_id, deps.organization_id, kind=LEDGER_KIND)
    try:
        await on_db_thread(metered.check, meter)
    except budgets.BudgetExceeded as exc:
        cap = exc.cap
        return failures.refuse(f"{cap.label[:1].upper()}{cap.label[1:]} of ${cap.limit:.2f} is used up (${cap.spent:.2f} spent this "
                               "month): no image was drawn and nothing was spent.")
    entry = catalog.provider(state.config.provider)
    if entry is None:  # the catalog changed under a published binding
        return failures.refuse(f"This deployment no longer offers the image provider {state.config.provider}.")
    model, client = build_model(entry, await on_db_thread(state.reveal), state.config.model)
    request = ModelRequest(parts=[UserPromptPart(
        f"Draw this image with the image generation tool, exactly as described:\n\n{text}")])
    try:
        response = await model_request(
            model, [request], model_settings={"timeout": TIMEOUT_SECONDS},
            model_request_parameters=ModelRequestParameters(native_tools=[_image_tool(state.config, entry)]))
    except Exception as exc:  # noqa: BLE001  (every provider failure is routed by _failure)
        return _failure(ctx, exc)
    finally:
        await client.aclose()
    images = [part.content for part in response.parts
              if isinstance(part, FilePart) and isinstance(part.content, BinaryImage)]
    await on_db_thread(_record, meter, response, state.config, len(images[:1]))
    if not images and response.finish_reason == "content_filter":  # Gemini's SAFETY / IMAGE_SAFETY finish
        logger.info("generate_image: the provider's safety filter stopped the image")
        return failures.bad_news("The image provider's content policy refused this description. Nothing was "
                                 "drawn; tell the person.")
    if not images:
        return failures.bad_news("The image model answered without drawing an image. Nothing was stored.")
    image = images[0]
    # Stored and served as what its bytes are: the provider's own word for the type is not trusted.
    sniffed = images_module.sniff(image.data[:64])
    if sniffed is None:
        return failures.bad_news("The image model's answer was not a PNG, JPEG, WebP or GIF image. Nothing was "
                                 "stored.")
    workspace_id = await on_db_thread(_workspace_for_output, deps.scratch.get("workspace_id"))
    media = await on_db_thread(
        store.save,
        organization_id=deps.organization_id, run_id=deps.run_id, conversation_id=deps.conversation_id,
        kind="image", data=image.data, media_type=sniffed[0], name=store.display_name("image", text),
        provider=state.config.provider, model=state.config.model, workspace_id=workspace_id)
    result: dict[str, Any] = store.file_entry(media)
    if media.workspace_path:
        result["workspace_path"] = media.workspace_path
    return result


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, ImageGenerationConfig)
    # The registry skips a binding without its key before build (publish refuses one too).
    assert ctx.secret_value is not None
    ctx.deps.scratch["image_generation"] = _ImageState(ctx.config, ctx.secret_value)
    return [function_toolset([generate_image])]


CAPABILITY = Capability(
    id="image_generation",
    name="Image generation",
    category="analysis",
    description="Draws images from a written description with a dedicated image model.",
    offers="drawing images (illustrations, pictures, mock-ups) with an image model",
    examples=(
        "Draw a watercolour fox in a snowy forest for our newsletter.",
        "Make a square logo sketch with the word 'Acme' in bold letters.",
        "Illustrate this blog post's opening paragraph.",
    ),
    never_does=(
        "It never draws once the organization's generated files fill their quota or a budget is used up, and "
        "never shows a generated image to anyone outside the organization except the visitor of the embed "
        "conversation it was made in."
    ),
    tools=(ToolDecl.from_function(generate_image, side_effecting=True),),
    key=KeyRequirement(kind="api_key", description="The image provider's API key (OpenAI or Google Gemini)"),
    config_model=ImageGenerationConfig,
    voice="live",
    build=build,
)
