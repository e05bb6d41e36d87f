"""The image catalog: which providers and models `generate_image` offers, from `image_models.json`.

No listing endpoint answers which models draw (`/v1/models` lists chat models), so the models are data. Which
providers can draw is the SDK's answer, not a list: an entry is kept only when its pydantic-ai model class
says it supports `ImageGenerationTool` (`Model.supported_native_tools()`) and this capability can build that
class from the one API key it seals. Anything else is dropped at load with a warning, never offered.

Prices are dated and per image at one size, keyed by quality (`standard` for a provider without qualities);
where none applies the image is recorded at zero and the run's cost marked partial (`image_price`). Google bills
an image as output tokens at its own image rate, which genai-prices does not tell apart from text:
`price_covers_output` says the per-image price replaces the response's output tokens rather than adding to them.
"""

from __future__ import annotations

import logging
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from media.catalogs import ProviderCatalog

logger = logging.getLogger(__name__)

CATALOG_PATH = Path(__file__).with_name("image_models.json")
OPTIONS = ("quality", "size", "background", "output_format", "aspect_ratio")


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")

    from_date: date = Field(alias="from")
    size: str
    usd_per_image: dict[str, Decimal]


class ImageModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=120)
    name: str = Field(min_length=1)
    use_when: str = Field(min_length=1)
    prices: list[Price] = Field(default_factory=list)


class ProviderEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_-]{1,30}$")
    name: str
    model_class: str
    # OpenAI: the Responses model that calls the image tool (the chosen image model travels as the tool's
    # `model`). Google names the image model itself; no caller.
    caller: str = ""
    sizes: list[str] = Field(default_factory=list)
    aspect_ratios: list[str] = Field(default_factory=list)
    # The drawing options this provider applies; a binding setting any other is refused (nothing is ignored).
    options: list[str] = Field(default_factory=lambda: list(OPTIONS))
    # The size an unset `size` draws at, for pricing (Google: 1K).
    default_size: str = ""
    price_covers_output: bool = False
    models: list[ImageModel] = Field(min_length=1)


class CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    providers: list[ProviderEntry]


def _model_classes() -> dict[str, Any]:
    """The pydantic-ai classes a catalog entry may name, asked whether they draw."""
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

    classes: dict[str, Any] = {"openai-responses": OpenAIResponsesModel, "openai-chat": OpenAIChatModel}
    try:  # the `google` extra (google-genai); without it a Google entry is dropped, never offered
        from pydantic_ai.models.google import GoogleModel
    except ImportError:
        return classes
    return {**classes, "google": GoogleModel}


# Model classes this capability can build from a single API key (capability.build_model).
BUILDABLE = frozenset({"openai-responses", "google"})


def _why_dropped(entry: ProviderEntry) -> str:
    from pydantic_ai.native_tools import ImageGenerationTool

    model_class = _model_classes().get(entry.model_class)
    if model_class is None:
        return f"unknown model class {entry.model_class!r}"
    if ImageGenerationTool not in model_class.supported_native_tools():
        return f"{model_class.__name__} does not support ImageGenerationTool"
    if entry.model_class not in BUILDABLE:
        return f"this capability cannot build {model_class.__name__} from an API key"
    if entry.model_class == "openai-responses" and not entry.caller:
        return "an OpenAI entry needs the Responses model that calls the image tool (caller)"
    if unknown := sorted(set(entry.options) - set(OPTIONS)):
        return f"unknown options {unknown}"
    if entry.model_class == "google":
        # GoogleModel draws only with a model whose profile outputs images (the class answers for all of them).
        from pydantic_ai.profiles.google import google_model_profile

        silent = [m.id for m in entry.models if not (google_model_profile(m.id) or {}).get("supports_image_output")]
        if silent:
            return f"models that do not draw: {silent}"
    return ""


def parse(raw: Any) -> dict[str, ProviderEntry]:
    """The usable providers of a catalog document, by id. A malformed file raises (ValidationError)."""
    document = CatalogFile.model_validate(raw)
    usable: dict[str, ProviderEntry] = {}
    for entry in document.providers:
        reason = _why_dropped(entry)
        if reason:
            logger.warning("image catalog: provider %s dropped: %s", entry.id, reason)
            continue
        usable[entry.id] = entry
    return usable


CATALOG = ProviderCatalog[ProviderEntry, ImageModel](CATALOG_PATH, parse, "image")
providers = CATALOG.providers
provider = CATALOG.provider
model = CATALOG.model


def image_price(entry: ImageModel, *, quality: str | None, size: str | None, on: date) -> Decimal | None:
    """The price of one image, or None when the catalog has none for this quality and size on that day."""
    applicable = [p for p in entry.prices if p.from_date <= on and p.size == size]
    if not applicable:
        return None
    latest = max(applicable, key=lambda p: p.from_date)
    return latest.usd_per_image.get(quality or "standard")
