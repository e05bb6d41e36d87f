"""Model providers: turn a `ModelProfile` row into a pydantic-ai `Model`.

`build_model` is synchronous on purpose: it reads the profile's secret and fallbacks through the ORM,
so the runner calls it before entering its async part. Keys come from the vault (`vault.reveal`) and go
straight into the provider's SDK client; nothing here logs them or puts them into an exception message.

Provider → pydantic-ai model:

| provider            | model class          | key              | base_url                              |
|---------------------|----------------------|------------------|---------------------------------------|
| `demo`              | `DemoModel` (offline) | —               | —                                     |
| `openai`            | `OpenAIChatModel`    | required         | optional (default api.openai.com)     |
| `anthropic`         | `AnthropicModel`     | required         | optional (default api.anthropic.com)  |
| `openrouter`        | `OpenRouterModel`    | required         | ignored (OpenRouter's own)            |
| `ollama`            | `OllamaModel`        | optional         | optional (default `OLLAMA_BASE_URL`)  |
| `openai_compatible` | `OpenAIChatModel`    | optional         | required                              |

Every provider is given its key (or a placeholder) and its base URL explicitly, so the SDKs never fall back
to the operator's environment (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, …): one tenant's profile pointing at its
own server must never receive the operator's key.

Every provider's HTTP client goes through the outbound guard (`agenticos.netguard.PinnedTransport`): each
request, redirects included, is resolved once, checked (cloud metadata always refused; private, loopback and
link-local addresses only for hosts in `MODEL_ALLOWED_PRIVATE_HOSTS`) and sent to the checked address, and a
redirect that leaves the base URL's origin carries no key header. A refusal surfaces as `netguard.Refused`
(its message is safe to show) and never reaches the server. The base URL is checked at save too
(`agents.services`), with the same allowance. The client is pydantic-ai's own default (timeouts, pool, user
agent) with that transport, handed to the provider as if it had created it: closed when the run enters the
model (`async with agent:`), replaced if the model is reused on another event loop.

Fallbacks: `profile.fallbacks` (same organization, chat kind) in label order, one level deep (a fallback's own
fallbacks are not followed, so cycles are impossible). A fallback that cannot be built (no key, a key the
vault cannot open) is skipped with a warning instead of breaking the primary. The FallbackModel moves on for
any `ModelAPIError` (HTTP errors incl. 401/5xx, timeouts, connection errors), pydantic-ai's default, and for
an address the guard refuses.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import httpx2
import pydantic
from django.conf import settings as django_settings
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionChunk
from pydantic_ai.exceptions import FallbackExceptionGroup, ModelAPIError, UserError
from pydantic_ai.models import Model
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.providers import Provider as PydanticAIProvider
from pydantic_ai.settings import ModelSettings

from agenticos import netguard
from agenticos.errors import Invalid
from agents.models import PROVIDERS_NEEDING_BASE_URL, PROVIDERS_NEEDING_KEY, ModelProfile, Provider
from agents.spec import ModelSettingsSpec

from .errors import describe_provider_error

logger = logging.getLogger(__name__)
P = TypeVar("P", bound="PydanticAIProvider[Any]")

__all__ = [
    "ModelConfigurationError",
    "build_model",
    "describe_provider_error",
    "model_settings_for",
    "FallbackExceptionGroup",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_OLLAMA_BASE_URL = "http://localhost:11434/v1"
# Sent when a keyless server (Ollama, a local OpenAI-compatible server) needs *some* bearer value; an explicit
# placeholder also stops the SDK from reading the operator's OPENAI_API_KEY from the environment.
KEYLESS_PLACEHOLDER = "no-key"

# Profile settings that are not ModelSettings keys are dropped (a typo must not reach the provider's SDK),
# except provider-specific settings, which pydantic-ai prefixes with the provider's name.
_SETTING_KEYS = frozenset(ModelSettings.__optional_keys__) | frozenset(ModelSettings.__required_keys__)
_PROVIDER_SETTING_PREFIXES = ("openai_", "anthropic_", "openrouter_", "ollama_")


class ModelConfigurationError(Invalid):
    """The profile cannot be turned into a model (missing key or base URL, unknown provider)."""

    code = "model_misconfigured"


def model_settings_for(profile: ModelProfile, spec_settings: ModelSettingsSpec | None = None) -> ModelSettings:
    """The profile's default settings, overridden by the agent spec's settings where the spec sets a value.

    `timeout_secs` (spec and profile) becomes pydantic-ai's per-request `timeout`.
    """
    merged: dict[str, Any] = {}
    for key, value in (profile.settings or {}).items():
        if key == "timeout_secs":
            key = "timeout"
        if key in _SETTING_KEYS or key.startswith(_PROVIDER_SETTING_PREFIXES):
            merged[key] = value
    if spec_settings is not None:
        for field in ("temperature", "max_tokens", "top_p"):
            value = getattr(spec_settings, field)
            if value is not None:
                merged[field] = value
        if spec_settings.timeout_secs is not None:
            merged["timeout"] = spec_settings.timeout_secs
    return ModelSettings(**merged)  # type: ignore[typeddict-item]


def build_model(profile: ModelProfile) -> Model:
    """The pydantic-ai model for a profile, wrapped in a FallbackModel when it has fallbacks. Sync (ORM)."""
    primary = _build_one(profile)
    if getattr(profile, "has_fallbacks", True) is False:  # annotated by the caller's query
        return primary
    fallbacks: list[Model] = []
    candidates = (
        profile.fallbacks.filter(organization_id=profile.organization_id, kind=ModelProfile.Kind.CHAT)
        .exclude(pk=profile.pk)
        .select_related("secret")
        .order_by("label")
    )
    for candidate in candidates:
        try:
            fallbacks.append(_build_one(candidate))
        except ModelConfigurationError as exc:
            logger.warning("Skipping fallback model profile %s: %s", candidate.pk, exc.message)
    if not fallbacks:
        return primary
    # A refused address (a profile whose base URL now resolves somewhere it may not go) moves on like an
    # unreachable provider does.
    return FallbackModel(primary, *fallbacks, fallback_on=(ModelAPIError, netguard.Refused))


def _build_one(profile: ModelProfile) -> Model:
    try:
        return _construct(profile)
    except UserError as exc:
        # pydantic-ai's own configuration checks (e.g. OpenRouter names need an "upstream/" prefix). Their
        # messages describe names and settings, never key values.
        raise ModelConfigurationError(
            f"The model profile “{profile.label}” is not valid: {exc.message}", details={"field": "model"}
        ) from exc


def model_features(profile: ModelProfile) -> Model | None:
    """The profile's model as pydantic-ai resolves it, to ask what it can do (`.profile`: the native tools both
    its class and the model support, whether it reasons), built with a placeholder key and never sent a
    request: publish checks ask it without opening the vault. None when the profile cannot be built (its own
    problems are reported where the profile is checked)."""
    try:
        return _construct(profile, api_key=KEYLESS_PLACEHOLDER)
    except (ModelConfigurationError, UserError):
        return None


def _construct(profile: ModelProfile, *, api_key: str | None = None) -> Model:
    provider = profile.provider
    model_name = profile.model
    settings = model_settings_for(profile)
    if provider == Provider.DEMO:
        from .demo import demo_model

        return demo_model(model_name=model_name or None, settings=settings)
    if provider not in Provider.values:
        raise ModelConfigurationError(f"Unknown model provider {provider!r}.", details={"field": "provider"})
    if not model_name:
        raise ModelConfigurationError("The model profile has no model name.", details={"field": "model"})
    if provider in PROVIDERS_NEEDING_BASE_URL and not profile.base_url:
        raise ModelConfigurationError(
            f"The model profile “{profile.label}” needs a base URL.", details={"field": "base_url"}
        )
    api_key = _api_key(profile) if api_key is None else api_key
    if provider in PROVIDERS_NEEDING_KEY and not api_key:
        raise ModelConfigurationError(
            f"The model profile “{profile.label}” needs an API key. Add one in Settings → Model profiles.",
            details={"field": "secret"},
        )

    if provider == Provider.OPENAI:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        base_url = profile.base_url or OPENAI_BASE_URL
        return OpenAIChatModel(
            model_name,
            provider=_guarded(OpenAIProvider, base_url, base_url=base_url, api_key=api_key),
            settings=settings,
        )
    if provider == Provider.ANTHROPIC:
        try:
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider
        except ImportError as exc:  # the `anthropic` SDK is an optional extra of pydantic-ai-slim
            raise ModelConfigurationError(
                "The Anthropic provider needs the `anthropic` package on the server.", details={"field": "provider"}
            ) from exc

        base_url = profile.base_url or ANTHROPIC_BASE_URL
        return AnthropicModel(
            model_name,
            provider=_guarded(AnthropicProvider, base_url, api_key=api_key, base_url=base_url),
            settings=settings,
        )
    if provider == Provider.OPENROUTER:
        from pydantic_ai.models.openrouter import OpenRouterModel
        from pydantic_ai.providers.openrouter import OpenRouterProvider

        return OpenRouterModel(
            model_name, provider=_guarded(OpenRouterProvider, OPENROUTER_BASE_URL, api_key=api_key), settings=settings
        )
    if provider == Provider.OLLAMA:
        from pydantic_ai.models.ollama import OllamaModel
        from pydantic_ai.providers.ollama import OllamaProvider

        base_url = profile.base_url or getattr(django_settings, "OLLAMA_BASE_URL", "") or DEFAULT_OLLAMA_BASE_URL
        return OllamaModel(
            model_name,
            provider=_guarded(OllamaProvider, base_url, base_url=base_url, api_key=api_key or KEYLESS_PLACEHOLDER),
            settings=settings,
        )
    # Provider.OPENAI_COMPATIBLE
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(
        model_name,
        provider=_guarded(OpenAIProvider, profile.base_url, base_url=profile.base_url,
                          api_key=api_key or KEYLESS_PLACEHOLDER),
        settings=settings,
    )


def guarded_http_client(base_url: str) -> httpx2.AsyncClient:
    """pydantic-ai's default provider client, sending through the outbound guard (see the module docstring).

    Redirects are followed (as the OpenAI SDK's own client does) because every hop passes the transport's
    check and loses the key when it leaves `base_url`'s origin."""
    from pydantic_ai._http import DEFAULT_HTTP_LIMITS, create_async_httpx2_client

    # The pool pydantic-ai (and the OpenAI and Anthropic SDKs) give their own clients, 1,000 connections: a
    # transport of one's own otherwise has httpx's 100, and the runs of a worker share a profile's client.
    client = create_async_httpx2_client(
        transport=netguard.PinnedTransport(allowance=netguard.MODEL_HOSTS, home=base_url, limits=DEFAULT_HTTP_LIMITS)
    )
    client.follow_redirects = True
    client.max_redirects = netguard.MAX_REDIRECTS
    return client


def _guarded(provider_class: Callable[..., P], home: str, /, **kwargs: Any) -> P:
    """The provider, built with a guarded client it then treats as its own: pydantic-ai closes and replaces
    only a client it created (`_own_http_client`, `_http_client_factory`; no public way to hand one over), and
    every replacement must be guarded too. An OpenAI SDK client among them reads streamed chunks as
    `ValidatedChunksOpenAI` does (pydantic-ai swaps only the HTTP client inside it, never the SDK client)."""
    factory = functools.partial(guarded_http_client, home)
    client = factory()
    provider = provider_class(http_client=client, **kwargs)
    provider._own_http_client = client
    provider._http_client_factory = factory
    sdk_client = getattr(provider, "_client", None)
    if type(sdk_client) is AsyncOpenAI:
        sdk_client.__class__ = ValidatedChunksOpenAI
    return provider


class ValidatedChunksOpenAI(AsyncOpenAI):
    """The OpenAI SDK's client, reading each streamed chat chunk with pydantic's validator (compiled, ~7 µs a
    chunk) before its own lenient builder (`construct_type`, pure Python, ~140 µs a chunk): the builder was the
    largest single item of a runs worker's CPU (bench/run_cost.py, cProfile: a quarter of the runs loop's time)
    for a model object the validator builds equal. A chunk the validator refuses — a server that bends the
    format — is built by the SDK's own path, exactly as before, so nothing that parsed before fails now. No
    setting of the SDK or of pydantic-ai does this: `_strict_response_validation` validates but raises on such a
    chunk instead of building it."""

    def _process_response_data(self, *, data: object, cast_to: type[Any], response: httpx2.Response) -> Any:
        if cast_to is ChatCompletionChunk and isinstance(data, dict):
            try:
                return ChatCompletionChunk.model_validate(data)
            except pydantic.ValidationError:
                pass
        return super()._process_response_data(data=data, cast_to=cast_to, response=response)


def _api_key(profile: ModelProfile) -> str:
    """The profile's key from the vault, or "" when it has none. Never logged."""
    if profile.secret_id is None:
        return ""
    from agenticos.vault import VaultError, reveal

    secret = profile.secret
    if secret is None or secret.organization_id != profile.organization_id:
        raise ModelConfigurationError(
            f"The key of model profile “{profile.label}” belongs to another organization.",
            details={"field": "secret"},
        )
    try:
        return reveal(secret).strip()
    except VaultError as exc:
        raise ModelConfigurationError(
            f"The key of model profile “{profile.label}” cannot be opened; enter it again.",
            details={"field": "secret"},
        ) from exc
