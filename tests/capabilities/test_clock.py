"""clock: the date in the instructions, get_current_time on request, IANA names only."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from tests.capabilities.helpers import run, spec


async def test_the_instructions_carry_the_current_date_in_the_agents_timezone():
    outcome = await run(spec({"id": "clock", "config": {"timezone": "Pacific/Auckland"}}), [])
    today = datetime.now(ZoneInfo("Pacific/Auckland")).strftime("%Y-%m-%d")
    assert "Current date and time: " in outcome.script.requests[0].instructions
    assert today in outcome.script.requests[0].instructions
    assert "(Pacific/Auckland," in outcome.script.requests[0].instructions


async def test_get_current_time_answers_in_the_agents_timezone_by_default():
    outcome = await run(
        spec({"id": "clock", "config": {"timezone": "Europe/Warsaw"}}), [("get_current_time", {})]
    )
    answer = outcome.returns[0]
    assert answer["timezone"] == "Europe/Warsaw"
    assert (
        datetime.fromisoformat(answer["iso"]).utcoffset()
        == datetime.now(ZoneInfo("Europe/Warsaw")).utcoffset()
    )


async def test_get_current_time_answers_for_another_timezone():
    outcome = await run(spec({"id": "clock"}), [("get_current_time", {"timezone": "America/New_York"})])
    assert outcome.returns[0]["timezone"] == "America/New_York"


async def test_an_unknown_timezone_argument_is_a_retry_naming_it():
    outcome = await run(spec({"id": "clock"}), [("get_current_time", {"timezone": "Mars/Olympus"})])
    assert "'Mars/Olympus' is not an IANA timezone name" in outcome.retries[0]
