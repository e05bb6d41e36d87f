"""Date and time. Puts "now" in the agent's instructions so it stops guessing from its training cut-off.

No tool, on purpose (spec: "`clock` … ninguna, a propósito"; "clock pone la fecha en las instrucciones"): the
instructions are read again for every request to the model, so a long run sees the time move on, and the
offset from UTC they carry lets the model work out another timezone's time. A tool would only cost a round
trip for what the model already has.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability

from capabilities.base import BuildContext, Built, Capability


@functools.cache
def _iana_names() -> frozenset[str]:
    # available_timezones() walks the zoneinfo tree on every call; the set does not change while we run.
    return frozenset(available_timezones())


def _zone(name: str) -> ZoneInfo | None:
    # ZoneInfo accepts odd keys such as "posixrules"; only real IANA names count.
    if name not in _iana_names() and name != "UTC":
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


class ClockConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timezone: str = Field(
        default="UTC",
        description="The IANA timezone the agent lives in, e.g. Europe/Warsaw.",
        json_schema_extra={"format": "iana-timezone"},
    )

    @field_validator("timezone")
    @classmethod
    def _known(cls, value: str) -> str:
        if _zone(value) is None:
            raise ValueError(f"{value!r} is not an IANA timezone name (for example Europe/Warsaw)")
        return value


@dataclass
class ClockInstructions(AbstractCapability[Any]):
    """The current date and time in the agent's timezone, read for every request to the model."""

    timezone: str = "UTC"

    def get_instructions(self):
        def now_text(ctx: RunContext[Any]) -> str:
            now = datetime.now(ZoneInfo(self.timezone))
            return (
                f"Current date and time: {now.strftime('%A %Y-%m-%d %H:%M')} ({self.timezone}, UTC{now.strftime('%z')}). "
                "Use it instead of guessing the date."
            )

        return now_text


def build(ctx: BuildContext) -> list[Built]:
    assert isinstance(ctx.config, ClockConfig)
    return [ClockInstructions(timezone=ctx.config.timezone)]


CAPABILITY = Capability(
    id="clock",
    name="Date and time",
    category="utility",
    description="Knows the current date and time in its timezone instead of guessing them.",
    offers="the current date and time, and its offset from UTC",
    examples=(
        "What day is it?",
        "How many days until the end of the quarter?",
        "What time is it in Tokyo right now?",
    ),
    never_does="It never changes anything and reads no calendar: it only reads the clock.",
    tools=(),
    tools_note=("No tools, on purpose: the current date and time, with the offset from UTC, are in the "
                "instructions of every request to the model."),
    config_model=ClockConfig,
    voice="live",
    recommended=True,
    build=build,
)
