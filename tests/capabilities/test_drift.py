"""Drift: for every capability, the tools it declares are the tools actually offered to the model.

Built with a representative config through a real Agent; the model's view is read from the first
request (FunctionModel's AgentInfo). A declared tool a capability does not offer in that config needs an
entry in EXEMPT, with the reason, and an entry that is no longer needed fails too.
"""

from __future__ import annotations

import importlib

import pytest
from asgiref.sync import sync_to_async
from pydantic_ai import DeferredToolRequests

from capabilities import registry
from tests.capabilities.helpers import Script, agent_for, deps, spec

# capability id → representative config (default config when absent)
REPRESENTATIVE: dict[str, dict] = {
    "planning": {"enable_subtasks": True},
    "code_execution": {"timeout_secs": 5, "max_memory_mb": 128},
    "clock": {"timezone": "Europe/Warsaw"},
    "thinking": {"effort": "medium"},
}

# capability id → {declared tool id: why it is not offered with the representative config}
EXEMPT: dict[str, dict[str, str]] = {}

BUILTIN_IDS = [importlib.import_module(module).CAPABILITY.id for module in registry.BUILTIN]

pytestmark = pytest.mark.django_db


async def _offered(capability_id: str, **deps_overrides) -> dict[str, str]:
    the_spec = spec({"id": capability_id, "config": REPRESENTATIVE.get(capability_id, {})})
    script = Script([])
    run_deps = deps(**deps_overrides)
    # Builds are synchronous and may read the database, as on the runner's assembly thread.
    built = await sync_to_async(registry.build_for_run)(the_spec, run_deps)
    agent = agent_for(the_spec, run_deps, script, built=built, output_type=[str, DeferredToolRequests])
    await agent.run("go", deps=run_deps)
    return {tool.name: tool.description or "" for tool in script.requests[0].function_tools}


@pytest.mark.parametrize("capability_id", BUILTIN_IDS)
async def test_declared_tools_equal_offered_tools(capability_id):
    cap = registry.get(capability_id)
    offered = await _offered(capability_id)
    exempt = EXEMPT.get(capability_id, {})
    declared = {t.name: t.description for t in cap.tools if t.id not in exempt}
    assert set(offered) == set(declared), (
        f"{capability_id}: offered {sorted(offered)} vs declared {sorted(declared)}"
    )
    # An exemption that is no longer needed (the tool is offered after all) is drift too.
    assert not set(exempt) & set(offered), (
        f"{capability_id}: stale exemption {sorted(set(exempt) & set(offered))}"
    )
    # The model reads the declared four-part text, in pydantic-ai's <summary>/<returns> shape.
    assert offered == declared
    for text in declared.values():
        assert text.startswith("<summary>") and "<returns>" in text


@pytest.mark.parametrize("can_ask_user", [True, False])
async def test_ask_user_offers_the_same_declared_tool_whoever_can_answer(can_ask_user):
    offered = await _offered("ask_user", can_ask_user=can_ask_user)
    assert set(offered) == {t.name for t in registry.get("ask_user").tools}


def test_every_exemption_names_a_declared_tool():
    for capability_id, tools in EXEMPT.items():
        declared = registry.get(capability_id).tool_ids()
        assert set(tools) <= declared, f"{capability_id}: exemption for a tool it no longer declares"


def test_every_builtin_capability_is_registered_and_tested_here():
    assert sorted(c.id for c in registry.all_capabilities() if c.id in BUILTIN_IDS) == sorted(BUILTIN_IDS)
