"""The speech catalog: providers, models, voices, formats and dated prices, from `text_to_speech_models.json`.

No provider lists which of its models speak, nor (for OpenAI and Gemini) which voices a model has: those are
data. A provider entry names the API shape `generate_speech` talks to it with (`api`); an entry whose shape
has no client here is dropped at load with a warning, never offered. ElevenLabs' voices belong to the
account (`account_voices`): the catalog lists none and a binding names one of the account's own by id.

Prices are dated, per million characters (speech is sold by the character, so the price of a clip is known
before it is made). A token-billed model's per-character price is that of typical speech; Gemini's entries
add the token prices its clips are recorded at afterwards (text tokens in, 25 audio tokens per second out).
"""

from __future__ import annotations

import logging
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from media.catalogs import ProviderCatalog

logger = logging.getLogger(__name__)

CATALOG_PATH = Path(__file__).with_name("text_to_speech_models.json")
# The API shapes `clients.py` speaks.
CLIENTS = frozenset({"openai-speech", "elevenlabs", "gemini"})
FORMATS = ("mp3", "wav")
# An ElevenLabs voice id: 20 letters and digits today; the check is the shape, the provider says if it exists.
ACCOUNT_VOICE_PATTERN = r"^[A-Za-z0-9]{16,40}$"


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")

    from_date: date = Field(alias="from")
    usd_per_million_characters: Decimal = Field(ge=0)
    usd_per_million_input_tokens: Decimal | None = Field(default=None, ge=0)
    usd_per_million_audio_tokens: Decimal | None = Field(default=None, ge=0)


class Voice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=60)
    description: str = Field(min_length=1, max_length=120)


class SpeechModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=120)
    name: str = Field(min_length=1)
    use_when: str = Field(min_length=1)
    max_input_characters: int = Field(ge=100, le=100_000)
    reads_instructions: bool = False
    # The provider's voices this model speaks with; None: all of them.
    voices: list[str] | None = None
    prices: list[Price] = Field(min_length=1)


class ProviderEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_-]{1,30}$")
    name: str
    api: str
    base_url: str = Field(pattern=r"^https://")
    formats: list[str] = Field(min_length=1)
    account_voices: bool = False
    voices: list[Voice] = Field(default_factory=list)
    models: list[SpeechModel] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> ProviderEntry:
        unknown = [f for f in self.formats if f not in FORMATS]
        if unknown:
            raise ValueError(f"{self.id}: unknown formats {unknown}")
        known = {v.id for v in self.voices}
        for entry in self.models:
            missing = sorted(set(entry.voices or []) - known)
            if missing:
                raise ValueError(f"{self.id}/{entry.id}: voices {missing} are not among the provider's voices")
        if not self.account_voices and not self.voices:
            raise ValueError(f"{self.id}: a provider without account voices lists its voices")
        return self

    def voices_of(self, model_id: str) -> list[Voice]:
        entry = next((m for m in self.models if m.id == model_id), None)
        if entry is None:
            return []
        return [v for v in self.voices if entry.voices is None or v.id in entry.voices]


class CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    providers: list[ProviderEntry]


def parse(raw: Any) -> dict[str, ProviderEntry]:
    """The usable providers of a catalog document, by id. A malformed file raises (ValidationError)."""
    usable: dict[str, ProviderEntry] = {}
    for entry in CatalogFile.model_validate(raw).providers:
        if entry.api not in CLIENTS:
            logger.warning("speech catalog: provider %s dropped: no client for the API %r", entry.id, entry.api)
            continue
        usable[entry.id] = entry
    return usable


CATALOG = ProviderCatalog[ProviderEntry, SpeechModel](CATALOG_PATH, parse, "speech")
providers = CATALOG.providers
provider = CATALOG.provider
model = CATALOG.model


def price_on(entry: SpeechModel, on: date) -> Price | None:
    """The price in force on `on`: the latest that started that day or before."""
    applicable = [p for p in entry.prices if p.from_date <= on]
    return max(applicable, key=lambda p: p.from_date) if applicable else None


MILLION = Decimal(1_000_000)


def characters_price(price: Price, characters: int) -> Decimal:
    return price.usd_per_million_characters * characters / MILLION


def gemini_price(price: Price, *, input_tokens: int, audio_seconds: float) -> tuple[Decimal, int] | None:
    """What Gemini bills a chunk: its text tokens in and 25 audio tokens per second out, with the audio
    tokens; None when the entry has no token prices."""
    if price.usd_per_million_input_tokens is None or price.usd_per_million_audio_tokens is None:
        return None
    audio_tokens = round(audio_seconds * 25)
    cost = (price.usd_per_million_input_tokens * input_tokens + price.usd_per_million_audio_tokens * audio_tokens)
    return cost / MILLION, audio_tokens
