"""The video catalog: what each provider's models can render, and at what dated price, from `video_models.json`.

A model's entry says its resolutions (lowest first), aspect ratios, duration range (`seconds`; null: the model
decides and does not report it, `decided_seconds` is its longest), whether its clips have sound (`audio`:
always, never or optional), whether it can start from an image, and its dated prices per second at each
resolution. A provider names the API shape `generate_video` talks to it with (`api`): one answered in the
request itself (`gemini-inline`) or a job that is submitted and polled (`byteplus-tasks`, `xai-videos`, `dashscope-tasks`). An
entry whose shape has no client here is dropped at load with a warning, never offered; a model without a
price for each of its resolutions is a malformed file.
"""

from __future__ import annotations

import logging
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from media.catalogs import ProviderCatalog

logger = logging.getLogger(__name__)

CATALOG_PATH = Path(__file__).with_name("video_models.json")
# The API shapes `clients.py` speaks, and which of them can cancel a job (BytePlus: while it is queued).
CLIENTS = frozenset({"gemini-inline", "byteplus-tasks", "xai-videos", "dashscope-tasks"})
CANCELLABLE = frozenset({"byteplus-tasks"})


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")

    from_date: date = Field(alias="from")
    usd_per_second: dict[str, Decimal]


class Seconds(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min: int = Field(ge=1, le=120)
    max: int = Field(ge=1, le=120)
    # The only lengths the model makes, when it does not make every length in the range (Wan: 5 or 10).
    only: list[int] | None = None

    def allows(self, seconds: int) -> bool:
        return self.min <= seconds <= self.max and (self.only is None or seconds in self.only)


class VideoModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=120)
    name: str = Field(min_length=1)
    use_when: str = Field(min_length=1)
    resolutions: list[str] = Field(min_length=1)
    aspect_ratios: list[str] = Field(min_length=1)
    seconds: Seconds | None
    decided_seconds: int | None = Field(default=None, ge=1, le=120)
    audio: Literal["always", "never", "optional"]
    audio_default: bool = True
    image_start: bool = False
    prices: list[Price] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> VideoModel:
        if self.seconds is None and self.decided_seconds is None:
            raise ValueError(f"{self.id}: a model that decides its duration names its longest (decided_seconds)")
        if self.seconds is not None and self.seconds.min > self.seconds.max:
            raise ValueError(f"{self.id}: seconds.min is above seconds.max")
        if self.seconds is not None and self.seconds.only is not None and not all(
                self.seconds.min <= n <= self.seconds.max for n in self.seconds.only):
            raise ValueError(f"{self.id}: seconds.only lists a length outside min-max")
        for price in self.prices:
            missing = sorted(set(self.resolutions) - set(price.usd_per_second))
            if missing:
                raise ValueError(f"{self.id}: the price from {price.from_date} has no rate for {missing}")
        return self

    @property
    def longest(self) -> int:
        return self.seconds.max if self.seconds is not None else int(self.decided_seconds or 0)


class ProviderEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_-]{1,30}$")
    name: str
    api: str
    base_url: str = Field(pattern=r"^https://")
    models: list[VideoModel] = Field(min_length=1)

    @property
    def can_cancel(self) -> bool:
        return self.api in CANCELLABLE


class CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    providers: list[ProviderEntry]


def parse(raw: Any) -> dict[str, ProviderEntry]:
    """The usable providers of a catalog document, by id. A malformed file raises (ValidationError)."""
    usable: dict[str, ProviderEntry] = {}
    for entry in CatalogFile.model_validate(raw).providers:
        if entry.api not in CLIENTS:
            logger.warning("video catalog: provider %s dropped: no client for the API %r", entry.id, entry.api)
            continue
        usable[entry.id] = entry
    return usable


CATALOG = ProviderCatalog[ProviderEntry, VideoModel](CATALOG_PATH, parse, "video")
providers = CATALOG.providers
provider = CATALOG.provider
model = CATALOG.model


def rate(entry: VideoModel, resolution: str, on: date) -> Decimal | None:
    """The price of one second at `resolution` in force on `on`, or None before the first dated price."""
    applicable = [p for p in entry.prices if p.from_date <= on]
    if not applicable:
        return None
    return max(applicable, key=lambda p: p.from_date).usd_per_second.get(resolution)
