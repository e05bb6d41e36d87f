"""The provider catalogs of the generation capabilities (image, speech, video): one JSON data file each, read
once, validated at load by the capability's own `parse` (which also drops the entries its SDK or clients
cannot serve). A broken data file is a deployment bug: loud, with its path."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import ValidationError


class _Model(Protocol):
    @property
    def id(self) -> str: ...


ModelT = TypeVar("ModelT", bound=_Model)
ModelT_co = TypeVar("ModelT_co", bound=_Model, covariant=True)


class _Provider(Protocol[ModelT_co]):
    @property
    def models(self) -> Sequence[ModelT_co]: ...


ProviderT = TypeVar("ProviderT", bound=_Provider[Any])


class ProviderCatalog(Generic[ProviderT, ModelT]):
    def __init__(self, path: Path, parse: Callable[[Any], dict[str, ProviderT]], what: str):
        self.path = path
        self._parse = parse
        self.what = what

    @functools.cached_property
    def _usable(self) -> dict[str, ProviderT]:
        try:
            return self._parse(json.loads(self.path.read_text()))
        except (OSError, ValueError, ValidationError) as exc:
            raise RuntimeError(f"{self.path} is not a valid {self.what} catalog: {exc}") from exc

    def providers(self) -> dict[str, ProviderT]:
        return self._usable

    def provider(self, provider_id: str) -> ProviderT | None:
        return self._usable.get(provider_id)

    def model(self, provider_id: str, model_id: str) -> ModelT | None:
        entry = self.provider(provider_id)
        return next((m for m in entry.models if m.id == model_id), None) if entry else None

    def provider_ids(self) -> list[Any]:  # JSON values for a config schema's enum
        return sorted(self._usable)

    def model_ids(self) -> list[Any]:
        return sorted({m.id for entry in self._usable.values() for m in entry.models})
