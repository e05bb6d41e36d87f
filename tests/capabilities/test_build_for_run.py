"""build_for_run: toolsets + capabilities, overrides by stable id, the approval map, "Your setup"."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.toolsets import ApprovalRequiredToolset, FunctionToolset

from agents.run_handle import RunDeps
from capabilities import registry
from capabilities.base import Capability, ToolDecl
from tests import factories
from tests.capabilities.conftest import lookup
from tests.capabilities.helpers import Script, deps, run, spec


def test_a_renamed_tool_keeps_its_stable_id_and_its_gate():
    built = registry.build_for_run(
        spec(
            {
                "id": "charts",
                "approval": "required",
                "tool_overrides": {"create_chart": {"name": "plot_numbers"}},
            }
        ),
        deps(),
    )
    route = built.tools["plot_numbers"]
    assert (route.capability_id, route.tool_id, route.approval) == ("charts", "create_chart", "required")
    assert route.requires_approval
    assert "create_chart" not in built.tools


def test_tool_approval_overrides_the_binding_approval_per_tool():
    built = registry.build_for_run(
        spec({"id": "planning", "approval": "required", "tool_approval": {"read_plan": "never"}}), deps()
    )
    assert built.approval_for("read_plan") == "never"
    assert built.approval_for("write_plan") == "required"
    assert built.approval_for("some_mcp_tool") == "default"


async def test_the_model_sees_and_can_call_the_renamed_and_redescribed_tool():
    the_spec = spec(
        {
            "id": "charts",
            "tool_overrides": {
                "create_chart": {"name": "plot_sales", "description": "Plot the sales figures."}
            },
        }
    )
    outcome = await run(
        the_spec,
        [
            (
                "plot_sales",
                {
                    "chart_type": "bar",
                    "title": "Q",
                    "x_values": ["a"],
                    "series": [{"name": "s", "values": [1]}],
                },
            )
        ],
    )
    [tool] = outcome.script.requests[0].function_tools
    assert (tool.name, tool.description) == ("plot_sales", "Plot the sales figures.")
    assert outcome.returns[0]["kind"] == "chart"


async def test_a_library_capabilitys_tools_are_renamed_too_and_its_guidance_follows():
    the_spec = spec({"id": "planning", "tool_overrides": {"write_plan": {"name": "set_checklist"}}})
    outcome = await run(the_spec, [("set_checklist", {"items": [{"content": "Do it", "status": "pending"}]})])
    assert "set_checklist" in outcome.script.offered and "write_plan" not in outcome.script.offered
    assert outcome.returns[0].startswith("Plan updated")
    assert "`set_checklist`" in outcome.script.requests[0].instructions
    assert "`write_plan`" not in outcome.script.requests[0].instructions


async def test_a_gate_built_from_the_map_parks_a_renamed_tool():
    built = registry.build_for_run(
        spec(
            {
                "id": "charts",
                "tool_approval": {"create_chart": "required"},
                "tool_overrides": {"create_chart": {"name": "plot"}},
            }
        ),
        deps(),
    )
    gated = [
        ApprovalRequiredToolset(
            ts, approval_required_func=lambda ctx, td, args: built.approval_for(td.name) == "required"
        )
        for ts in built.toolsets
    ]
    script = Script(
        [
            (
                "plot",
                {
                    "chart_type": "bar",
                    "title": "t",
                    "x_values": [1],
                    "series": [{"name": "a", "values": [1]}],
                },
            )
        ]
    )
    agent = Agent(
        FunctionModel(script), deps_type=RunDeps, toolsets=gated, output_type=[str, DeferredToolRequests]
    )
    result = await agent.run("go", deps=deps())
    assert isinstance(result.output, DeferredToolRequests)
    assert [call.tool_name for call in result.output.approvals] == ["plot"]


def test_your_setup_lists_what_the_agent_has_and_what_it_lacks():
    built = registry.build_for_run(spec({"id": "clock"}, {"id": "charts", "enabled": False}), deps())
    text = built.instructions
    have, lack = text.split("does not have", 1) if "does not have" in text else (text, "")
    assert "Date and time (clock)" in have
    assert "Charts (charts)" in lack and "Calculations (code_execution)" in lack
    assert "Date and time (clock)" not in lack
    assert built.active == ["clock"]


@pytest.mark.usefixtures("probe_capabilities")
def test_a_scope_withdrawn_after_publish_leaves_the_capability_out_and_says_so(settings):
    settings.DEFAULT_GRANTED_SCOPES = []
    built = registry.build_for_run(spec({"id": "code_execution"}), deps())
    assert built.toolsets == [] and built.tools == {}
    assert built.skipped == {"code_execution": "this deployment does not grant code:execute"}
    assert "Calculations (code_execution): this deployment does not grant code:execute." in built.instructions


@pytest.mark.usefixtures("probe_capabilities")
def test_a_key_requirement_without_a_secret_leaves_the_capability_out():
    built = registry.build_for_run(spec({"id": "probe_search", "config": {"provider": "paid"}}), deps())
    assert "probe_search" in built.skipped and built.toolsets == []


def test_a_config_that_no_longer_validates_is_skipped_instead_of_failing_the_run():
    the_spec = spec({"id": "clock"})
    the_spec.capabilities[0].config = {"timezone": "Gone/Away"}
    built = registry.build_for_run(the_spec, deps())
    assert "clock" in built.skipped and built.toolsets == []


@pytest.fixture
def secret_reader():
    seen: dict = {}

    def build(ctx):
        seen["secret"] = ctx.secret_value
        seen["ctx"] = ctx
        return [FunctionToolset([lookup])]

    cap = registry.register(
        Capability(
            id="probe_secret",
            name="Probe secret",
            category="utility",
            description="test",
            tools=(ToolDecl.from_function(lookup),),
            build=build,
        )
    )
    yield seen
    registry.unregister(cap.id)


def test_the_bound_secret_is_revealed_lazily_from_the_vault_of_the_runs_organization(db, org, secret_reader):
    secret = factories.secret(org, value="sk-live-123")
    built = registry.build_for_run(
        spec({"id": "probe_secret", "secret_id": str(secret.pk)}), deps(organization_id=str(org.pk))
    )
    assert built.active == ["probe_secret"]
    assert "sk-live-123" not in built.instructions
    assert secret_reader["secret"]() == "sk-live-123"
    assert secret_reader["ctx"].organization_id == str(org.pk)
    assert [b.id for b in secret_reader["ctx"].spec.capabilities] == ["probe_secret"]


def test_another_organizations_secret_is_never_revealed(db, org, outsider_org, secret_reader):
    foreign = factories.secret(outsider_org, value="sk-theirs")
    registry.build_for_run(
        spec({"id": "probe_secret", "secret_id": str(foreign.pk)}), deps(organization_id=str(org.pk))
    )
    from agenticos.models import Secret

    with pytest.raises(Secret.DoesNotExist):
        secret_reader["secret"]()


def test_a_capability_bound_without_anything_to_offer_attaches_nothing():
    cap = registry.register(
        Capability(
            id="probe_empty",
            name="Probe empty",
            category="utility",
            description="test",
            tools=(),
            build=lambda ctx: [],
        )
    )
    try:
        built = registry.build_for_run(spec({"id": "probe_empty"}), deps())
        assert built.toolsets == [] and built.capabilities == [] and built.active == []
    finally:
        registry.unregister(cap.id)


async def test_a_gate_over_the_assembled_toolset_also_parks_tools_that_library_capabilities_bring():
    # ApprovalRequiredToolset around `built.toolsets` alone misses Planning's and AskUser's own toolsets;
    # a capability's get_wrapper_toolset sees every tool of the run, under the names the model calls.
    from dataclasses import dataclass

    from pydantic_ai.capabilities import AbstractCapability

    built = registry.build_for_run(
        spec(
            {
                "id": "planning",
                "tool_approval": {"write_plan": "required"},
                "tool_overrides": {"write_plan": {"name": "set_checklist"}},
            }
        ),
        deps(),
    )

    @dataclass
    class Gate(AbstractCapability):
        def get_wrapper_toolset(self, toolset):
            return ApprovalRequiredToolset(
                toolset,
                approval_required_func=lambda ctx, td, args: built.approval_for(td.name) == "required",
            )

    script = Script([("set_checklist", {"items": [{"content": "x", "status": "pending"}]})])
    agent = Agent(
        FunctionModel(script),
        deps_type=RunDeps,
        toolsets=built.toolsets,
        capabilities=[Gate(), *built.capabilities],
        output_type=[str, DeferredToolRequests],
    )
    result = await agent.run("go", deps=deps())
    assert isinstance(result.output, DeferredToolRequests)
    assert [call.tool_name for call in result.output.approvals] == ["set_checklist"]
