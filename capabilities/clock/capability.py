"""Date and time. Puts "now" in the agent's instructions so it stops guessing from its training cut-off,
and offers `get_current_time` for another timezone or a fresh reading during a long run.

The spec lists clock with no tools (the date goes in the instructions); issue 3 (which wins) has the demo
model *call* clock, so the tool exists too, and the catalog entry says why (`tools_note`). It only reads the
clock, so there is nothing to approve.
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

from capabilities import failures
from capabilities.base import BuildContext, Built, Capability, ToolDecl, function_toolset


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


def describe(now: datetime) -> dict[str, str]:
    return {
        "iso": now.isoformat(timespec="seconds"),
        "date": now.strftime("%Y-%m-%d"),
        "time": now.strftime("%H:%M:%S"),
        "weekday": now.strftime("%A"),
        "timezone": str(now.tzinfo),
        "utc_offset": now.strftime("%z"),
    }


async def get_current_time(ctx: RunContext[Any], timezone: str | None = None) -> dict[str, str] | str:
    """Read the current date and time from the clock, optionally in another timezone.

    Use it when the exact current time matters (a deadline, "how long until", another city's time).
    Today's date is already in your instructions, so you do not need this just to know the date.

    Args:
        timezone: An IANA timezone name such as Europe/Warsaw or America/New_York. Default: the agent's
            own timezone.

    Returns:
        An object with iso (ISO 8601 with offset), date, time, weekday, timezone and utc_offset.
        An unknown timezone name comes back as a request to call again with a valid IANA name.
    """
    name = timezone or ctx.deps.scratch.get("clock_timezone", "UTC")
    zone = _zone(name)
    if zone is None:
        return failures.retry(
            ctx,
            f"{name!r} is not an IANA timezone name. Call again with one such as Europe/Warsaw, or omit it.",
        )
    return describe(datetime.now(zone))


@dataclass
class ClockInstructions(AbstractCapability[Any]):
    """The current date and time in the agent's timezone, read when each run starts."""

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
    ctx.deps.scratch["clock_timezone"] = ctx.config.timezone
    return [ClockInstructions(timezone=ctx.config.timezone), function_toolset([get_current_time])]


CAPABILITY = Capability(
    id="clock",
    name="Date and time",
    category="utility",
    description="Knows the current date and time in its timezone instead of guessing them.",
    offers="the current date and time, in any timezone",
    examples=(
        "What day is it?",
        "How many days until the end of the quarter?",
        "What time is it in Tokyo right now?",
    ),
    never_does="It never changes anything and reads no calendar: it only reads the clock.",
    tools=(ToolDecl.from_function(get_current_time),),
    tools_note=(
        "One tool, although the date and time are already in the instructions of every run: get_current_time "
        "reads another timezone, or the exact time during a long run. It only reads the clock, so there is "
        "nothing to approve."
    ),
    config_model=ClockConfig,
    voice="live",
    recommended=True,
    build=build,
)
