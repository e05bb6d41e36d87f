"""clock: the date in the instructions of every request, no tool on purpose, IANA names only."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from capabilities import registry
from capabilities.clock.capability import ClockConfig
from tests.capabilities.helpers import run, spec


async def test_the_instructions_carry_the_current_date_in_the_agents_timezone():
    outcome = await run(spec({"id": "clock", "config": {"timezone": "Pacific/Auckland"}}), [])
    now = datetime.now(ZoneInfo("Pacific/Auckland"))
    instructions = outcome.script.requests[0].instructions
    assert "Current date and time: " in instructions
    assert now.strftime("%Y-%m-%d") in instructions
    assert f"(Pacific/Auckland, UTC{now.strftime('%z')})" in instructions


async def test_the_clock_offers_the_model_no_tool():
    outcome = await run(spec({"id": "clock", "config": {"timezone": "Europe/Warsaw"}}), [])
    assert outcome.script.offered == []
    assert "(Europe/Warsaw," in outcome.script.requests[0].instructions


def test_the_catalog_declares_no_tool_for_the_clock_and_says_why():
    clock = registry.find("clock")
    assert clock is not None and clock.tools == ()
    assert "on purpose" in clock.tools_note and "instructions" in clock.tools_note


@pytest.mark.django_db
def test_a_tool_setting_for_the_clock_is_refused_at_publish(org):
    problems = registry.validate_bindings(spec({"id": "clock", "tool_approval": {"get_current_time": "required"}}),
                                          organization=org, can_view_secret=lambda secret_id: True)
    assert [p["field"] for p in problems] == ["capabilities.0.tool_approval.get_current_time"]
    assert "has no tool with id 'get_current_time' (its tools: none)" in problems[0]["message"]


def test_an_unknown_timezone_is_refused():
    with pytest.raises(ValidationError, match="'Mars/Olympus' is not an IANA timezone name"):
        ClockConfig(timezone="Mars/Olympus")
