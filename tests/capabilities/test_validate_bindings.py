"""The publish check: every problem at once, each with its field path."""

from __future__ import annotations

import uuid

import pytest

from agents.spec import AgentSpec
from capabilities import registry
from tests import factories

pytestmark = pytest.mark.usefixtures("probe_capabilities")


def _check(org, *bindings, can_view=lambda secret_id: True):
    spec = AgentSpec(name="A", capabilities=list(bindings))
    return registry.validate_bindings(spec, organization=org, can_view_secret=can_view)


def _fields(problems):
    return {p["field"] for p in problems}


def test_a_clean_spec_has_no_problems(org):
    secret = factories.secret(org)
    assert (
        _check(
            org,
            {"id": "clock", "config": {"timezone": "Europe/Warsaw"}},
            {"id": "code_execution", "config": {"timeout_secs": 120, "max_memory_mb": 4096}},
            {
                "id": "planning",
                "tool_approval": {"write_plan": "required"},
                "tool_overrides": {"read_plan": {"name": "show_checklist"}},
            },
            {"id": "probe_search", "config": {"provider": "paid"}, "secret_id": str(secret.pk)},
        )
        == []
    )


def test_every_problem_is_reported_at_once_by_field_path(org):
    problems = _check(
        org,
        {"id": "teleport"},
        {"id": "clock", "config": {"timezone": "Mars/Olympus"}},
        {"id": "code_execution", "config": {"timeout_secs": 121, "max_memory_mb": 8, "shell": True}},
        {
            "id": "charts",
            "tool_approval": {"draw_picture": "required"},
            "tool_overrides": {"nope": {"name": "x"}},
        },
    )
    assert _fields(problems) == {
        "capabilities.0.id",
        "capabilities.1.config.timezone",
        "capabilities.2.config.timeout_secs",
        "capabilities.2.config.max_memory_mb",
        "capabilities.2.config.shell",
        "capabilities.3.tool_approval.draw_picture",
        "capabilities.3.tool_overrides.nope",
    }
    by_field = {p["field"]: p["message"] for p in problems}
    assert "Unknown capability 'teleport'" in by_field["capabilities.0.id"]
    assert "Mars/Olympus" in by_field["capabilities.1.config.timezone"]
    assert "create_chart" in by_field["capabilities.3.tool_approval.draw_picture"]  # names the real tool ids


def test_an_override_name_no_model_could_call_is_refused(org):
    problems = _check(
        org,
        {"id": "charts", "tool_overrides": {"create_chart": {"name": "draw a chart!"}}},
        {"id": "code_execution", "tool_overrides": {"run_python": {"name": "x" * 65}}},
    )
    assert _fields(problems) == {
        "capabilities.0.tool_overrides.create_chart.name",
        "capabilities.1.tool_overrides.run_python.name",
    }


def test_an_override_name_that_collides_with_another_tool_is_refused(org):
    problems = _check(
        org,
        {"id": "charts"},
        {"id": "code_execution", "tool_overrides": {"run_python": {"name": "create_chart"}}},
    )
    assert problems == [
        {
            "field": "capabilities.1.tool_overrides.run_python.name",
            "message": "Tool name 'create_chart' is already used by another tool (capabilities.0.id).",
        }
    ]


def test_a_disabled_binding_keeps_its_config_checked_but_claims_no_names(org):
    problems = _check(
        org,
        {"id": "charts"},
        {
            "id": "code_execution",
            "enabled": False,
            "config": {"timeout_secs": 121},
            "tool_overrides": {"run_python": {"name": "create_chart"}},
        },
    )
    assert _fields(problems) == {"capabilities.1.config.timeout_secs"}


def test_a_capability_bound_twice_is_refused(org):
    assert _fields(_check(org, {"id": "charts"}, {"id": "charts"})) == {"capabilities.1.id"}


def test_a_key_requirement_that_applies_needs_a_secret(org):
    assert _check(org, {"id": "probe_search", "config": {"provider": "free"}}) == []
    problems = _check(org, {"id": "probe_search", "config": {"provider": "paid"}})
    assert _fields(problems) == {"capabilities.0.secret_id"}
    assert "(API key)" in problems[0]["message"]  # the kind in words, not its id


def test_a_foreign_secret_reads_exactly_like_a_missing_one(org, outsider_org):
    foreign = factories.secret(outsider_org)
    foreign_problems = _check(
        org, {"id": "probe_search", "config": {"provider": "paid"}, "secret_id": str(foreign.pk)}
    )
    missing_problems = _check(
        org, {"id": "probe_search", "config": {"provider": "paid"}, "secret_id": str(uuid.uuid4())}
    )
    malformed = _check(org, {"id": "probe_search", "config": {"provider": "paid"}, "secret_id": "not-a-uuid"})
    assert (
        foreign_problems
        == missing_problems
        == malformed
        == [{"field": "capabilities.0.secret_id", "message": "No such secret in this organization."}]
    )


def test_a_secret_the_publisher_cannot_view_is_refused(org):
    secret = factories.secret(org)
    asked = []
    problems = _check(
        org,
        {"id": "probe_search", "config": {"provider": "paid"}, "secret_id": str(secret.pk)},
        can_view=lambda secret_id: asked.append(secret_id) or False,
    )
    assert asked == [str(secret.pk)]
    assert _fields(problems) == {"capabilities.0.secret_id"}
    assert "cannot use this secret" in problems[0]["message"]


def test_a_scope_the_deployment_does_not_grant_is_refused(org):
    problems = _check(org, {"id": "probe_browser"})
    assert problems == [
        {
            "field": "capabilities.0.id",
            "message": "Probe browser needs the scope(s) web:browse, which this deployment does not grant.",
        }
    ]


def test_removing_a_scope_from_the_deployment_refuses_every_spec_that_needs_it(org, settings):
    settings.DEFAULT_GRANTED_SCOPES = ["web:read"]
    problems = _check(org, {"id": "code_execution"})
    assert _fields(problems) == {"capabilities.0.id"}
    assert "code:execute" in problems[0]["message"]


def test_approval_on_a_provider_executed_tool_is_refused(org):
    per_tool = _check(org, {"id": "probe_search", "tool_approval": {"native_search": "required"}})
    assert _fields(per_tool) == {"capabilities.0.tool_approval.native_search"}
    whole = _check(org, {"id": "probe_search", "approval": "required"})
    assert _fields(whole) == {"capabilities.0.approval"}
    excused = _check(
        org, {"id": "probe_search", "approval": "required", "tool_approval": {"native_search": "never"}}
    )
    assert excused == []


def test_a_disabled_binding_needs_no_scope_or_key_but_a_foreign_secret_is_still_refused(org, outsider_org):
    assert _check(org, {"id": "probe_browser", "enabled": False}) == []
    assert _check(org, {"id": "probe_search", "enabled": False, "config": {"provider": "paid"}}) == []
    foreign = factories.secret(outsider_org)
    problems = _check(org, {"id": "probe_search", "enabled": False, "secret_id": str(foreign.pk)})
    assert _fields(problems) == {"capabilities.0.secret_id"}
