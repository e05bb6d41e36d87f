"""The chat apps as the channel tools see them: channelbots fills this in ChannelbotsConfig.ready(), so the
capability never imports a surface (the import-linter contract in pyproject.toml)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class ChannelAccess:
    # run id → (the platform client of the bot the run came through, the run's channel), or None when the run
    # did not come from a channel (or its bot is gone). Sync (ORM).
    channel_of_run: Callable[[str], tuple[Any, dict[str, Any]] | None]
    # What a platform call raises; its message is safe to show the model.
    error: type[Exception]
    # The most a chat attachment may be.
    max_file_bytes: int


_registered: list[ChannelAccess] = []


def register(access: ChannelAccess) -> None:
    _registered[:] = [access]


def current() -> ChannelAccess:
    if not _registered:
        raise ImproperlyConfigured("No chat app registered its channel access (channelbots is not installed?).")
    return _registered[0]
