"""tool_output_limits: the harness's ToolOutputLimits at one threshold, with a store that lives for the run."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from capabilities import registry
from capabilities.tool_output_limits.capability import ToolOutputLimitsConfig
from tests.capabilities.helpers import spec
from tests.tools.helpers import run_sync

ORG = "00000000-0000-0000-0000-000000000001"


@pytest.fixture(autouse=True)
def _setup(settings, tool_capabilities):
    settings.DEFAULT_GRANTED_SCOPES = [*settings.DEFAULT_GRANTED_SCOPES, "web:fetch"]
    settings.TOOL_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]


def test_truncate_cuts_an_oversized_return_with_a_marker(rest_api):
    outcome = run_sync(spec({"id": "web_fetch", "config": {"max_content_chars": 200_000}},
                            {"id": "tool_output_limits", "config": {"action": "truncate", "threshold": 2000,
                                                                    "max_chars": 1500}}),
                       [("web_fetch", {"url": f"{rest_api.base}/page.html?n=2000"})], org_id=ORG)
    text = str(outcome.returns[0])
    assert len(text) < 3000 and "omitted" in text


def test_spill_hands_back_a_handle_and_read_tool_result_is_offered(rest_api):
    outcome = run_sync(spec({"id": "web_fetch", "config": {"max_content_chars": 200_000}},
                            {"id": "tool_output_limits", "config": {"threshold": 2000}}),
                       [("web_fetch", {"url": f"{rest_api.base}/page.html?n=2000"})], org_id=ORG)
    assert "read_tool_result" in outcome.script.offered
    assert "stored to handle" in str(outcome.returns[0])


def test_a_summary_prompt_must_name_both_placeholders():
    with pytest.raises(ValidationError):
        ToolOutputLimitsConfig(action="summarize", summary_prompt="Summarise {output}")


def test_the_catalog_lists_every_capability_of_this_issue():
    ids = {entry["id"] for entry in registry.catalog_json()["capabilities"]}
    assert {"custom_tools", "database", "mcp", "web_research", "web_fetch", "tool_search",
            "tool_output_limits"} <= ids
