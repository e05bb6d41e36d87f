"""When a schedule is due: cron (5 fields, croniter) or an interval, read in the trigger's IANA timezone.

Pure functions of (trigger fields, a time): the dispatcher passes `now`, so tests drive the clock.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from croniter import CroniterBadCronError, croniter

from agenticos.errors import Invalid


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Invalid(f"{name!r} is not an IANA timezone (e.g. Europe/Madrid).", details={"field": "timezone"}) from None


def check_timezone(name: str) -> str:
    name = (name or "UTC").strip()
    if name not in available_timezones() and name != "UTC":
        raise Invalid(f"{name!r} is not an IANA timezone (e.g. Europe/Madrid).", details={"field": "timezone"})
    return name


def check_cron(expression: str) -> str:
    expression = " ".join((expression or "").split())
    if len(expression.split(" ")) != 5:
        raise Invalid("A cron expression has 5 fields: minute hour day-of-month month day-of-week.",
                      details={"field": "cron"})
    try:
        croniter(expression)
    except (CroniterBadCronError, ValueError, KeyError) as exc:
        raise Invalid(f"The cron expression is invalid: {exc}", details={"field": "cron"}) from None
    return expression


def describe(expression: str) -> str:
    """A person's reading of a cron expression ("At 09:00, Monday through Friday"), or "" when unknown."""
    try:
        from cron_descriptor import get_description

        return str(get_description(expression))
    except Exception:  # noqa: BLE001  (a preview only: an odd expression just has none)
        return ""


def next_after(trigger, after: datetime) -> datetime | None:
    """The first due time strictly after `after` within [starts_at, ends_at], or None."""
    if trigger.starts_at and after < trigger.starts_at:
        after = trigger.starts_at - timedelta(microseconds=1)
    if trigger.cron:
        local = after.astimezone(zone(trigger.timezone))
        due = croniter(trigger.cron, local).get_next(datetime)
    elif trigger.every_seconds:
        anchor = trigger.starts_at or trigger.created_at
        steps = max(0, math.floor((after - anchor).total_seconds() / trigger.every_seconds) + 1)
        due = anchor + timedelta(seconds=steps * trigger.every_seconds)
    else:
        return None
    if trigger.ends_at and due > trigger.ends_at:
        return None
    return due


def latest_due(trigger, now: datetime) -> datetime | None:
    """The newest due time at or before `now` (missed firings after downtime collapse into this one)."""
    if trigger.next_run_at is None or trigger.next_run_at > now:
        return None
    latest = trigger.next_run_at
    if trigger.cron:
        local = (now + timedelta(microseconds=1)).astimezone(zone(trigger.timezone))
        candidate = croniter(trigger.cron, local).get_prev(datetime)
    else:
        anchor = trigger.starts_at or trigger.created_at
        steps = math.floor((now - anchor).total_seconds() / trigger.every_seconds)
        candidate = anchor + timedelta(seconds=steps * trigger.every_seconds)
    if candidate > latest and (trigger.ends_at is None or candidate <= trigger.ends_at):
        latest = candidate
    return latest
