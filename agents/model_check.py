"""Settings → Models: "Test connection" (one real request to the model, its failure said readably) and the
provider's model list where it has one.

Both go out exactly as a run's requests do: the model is `agents.providers.build_model` (the outbound guard,
the vault's key, never the operator's environment), the list is one GET through the same guard
(`netguard.PinnedSyncTransport`, `MODEL_ALLOWED_PRIVATE_HOSTS`). A failure is described by
`providers.describe_provider_error` — a category and a hand-written sentence, never the SDK's text, which can
carry a response body or a URL with a key.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx2

from agenticos import netguard
from agents.models import ModelProfile, Provider

PROMPT = "Reply with the single word OK."
TIMEOUT_SECONDS = 30.0
MAX_LISTED = 300


@dataclass
class CheckResult:
    ok: bool
    message: str
    reply: str = ""
    models: list[str] = field(default_factory=list)
    # The outbound guard's instruction for the operator (names a deployment setting): shown only to who may read
    # it (`agenticos.tenancy.sees_deployment_settings`).
    hint: str = ""


def check_connection(profile: ModelProfile) -> CheckResult:
    """One short request to the profile's model (fallbacks left out: the test is of this profile), then the
    provider's model list. An embedding profile is tested with one embedding instead."""
    from agents.providers import build_model, describe_provider_error

    if profile.kind == ModelProfile.Kind.EMBEDDING:
        return _check_embedding(profile)
    profile.has_fallbacks = False  # type: ignore[attr-defined]  # read by build_model: this profile alone
    try:
        model = build_model(profile)
        reply = asyncio.run(_ask(model))
    except Exception as exc:  # noqa: BLE001  (every failure is said to the person, as a run's would be)
        summary = describe_provider_error(exc)
        message = str(summary.get("message") or "The request failed.")
        if summary.get("status"):
            message += f" (HTTP {summary['status']})"
        return CheckResult(ok=False, message=message, models=list_models(profile), hint=str(summary.get("hint") or ""))
    return CheckResult(ok=True, message="The model answered.", reply=reply[:200], models=list_models(profile))


async def _ask(model: Any) -> str:
    from pydantic_ai.direct import model_request
    from pydantic_ai.messages import ModelRequest, TextPart

    response = await asyncio.wait_for(
        model_request(model, [ModelRequest.user_text_prompt(PROMPT)], model_settings={"max_tokens": 16}),
        timeout=TIMEOUT_SECONDS)
    return "".join(part.content for part in response.parts if isinstance(part, TextPart)).strip()


def _check_embedding(profile: ModelProfile) -> CheckResult:
    from knowledge.embeddings import EmbeddingError, embed

    try:
        result = embed(profile, ["connection test"])
    except EmbeddingError as exc:
        return CheckResult(ok=False, message=str(exc), models=list_models(profile), hint=exc.hint)
    size = len(result.vectors[0]) if result.vectors else 0
    return CheckResult(ok=True, message=f"The model answered with a vector of {size} numbers.",
                       models=list_models(profile))


def _listing(profile: ModelProfile, key: str) -> tuple[str, dict[str, str]] | None:
    """The provider's list endpoint and its headers, or None when it has none (the demo)."""
    from agents import providers

    provider = profile.provider
    if provider == Provider.ANTHROPIC:
        base = (profile.base_url or providers.ANTHROPIC_BASE_URL).rstrip("/")
        return f"{base}/v1/models?limit=1000", {"x-api-key": key, "anthropic-version": "2023-06-01"}
    bases: dict[str, str] = {Provider.OPENAI: providers.OPENAI_BASE_URL, Provider.OPENROUTER: providers.OPENROUTER_BASE_URL,
             Provider.OLLAMA: providers.DEFAULT_OLLAMA_BASE_URL, Provider.OPENAI_COMPATIBLE: ""}
    if provider not in bases:
        return None
    base = profile.base_url if provider != Provider.OPENROUTER else ""
    if provider == Provider.OLLAMA and not base:
        from django.conf import settings

        base = getattr(settings, "OLLAMA_BASE_URL", "") or ""
    base = (base or bases[provider]).rstrip("/")
    if not base:
        return None
    return f"{base}/models", {"Authorization": f"Bearer {key or providers.KEYLESS_PLACEHOLDER}"}


def list_models(profile: ModelProfile) -> list[str]:
    """The model ids the provider lists (sorted), or [] when it lists none or cannot be asked: the list only
    helps to fill the form, a model name typed by hand still works."""
    from agents.providers import ModelConfigurationError, _api_key

    try:
        key = _api_key(profile)
    except ModelConfigurationError:
        return []
    target = _listing(profile, key)
    if target is None:
        return []
    url, headers = target
    transport = netguard.PinnedSyncTransport(allowance=netguard.MODEL_HOSTS, home=url)
    try:
        with httpx2.Client(transport=transport, timeout=TIMEOUT_SECONDS, follow_redirects=False,
                           trust_env=False) as client:
            response = client.get(url, headers=headers)
        if response.status_code >= 400:
            return []
        rows = response.json().get("data") or []
    except (netguard.Refused, httpx2.HTTPError, ValueError, AttributeError):
        return []
    ids = {str(row.get("id")) for row in rows if isinstance(row, dict) and row.get("id")}
    return sorted(ids)[:MAX_LISTED]
