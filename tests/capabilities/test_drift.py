"""Drift: for every capability, the tools it declares are the tools actually offered to the model.

Built with a representative setup through a real Agent; the model's view is read from its first request
(FunctionModel's AgentInfo). A declared tool a capability does not offer with its representative setup
needs an entry in EXEMPT, with the reason; an exemption for a tool that is offered after all fails too.

A capability that offers tools only when bound to data (collections, files, connections) registers a
SETUP that creates that data in the test organization and returns the binding config and spec fields.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai import DeferredToolRequests

from agenticos.models import Organization
from agents.spec import AgentSpec
from capabilities import registry
from tests import factories
from tests.capabilities.helpers import Script, agent_for, deps

# capability id → representative config (default config when absent)
REPRESENTATIVE: dict[str, dict[str, Any]] = {
    "planning": {"enable_subtasks": True},
    "code_execution": {"timeout_secs": 5, "max_memory_mb": 128},
    "clock": {"timezone": "Europe/Warsaw"},
    "thinking": {"effort": "medium"},
}

def _knowledge(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    return {}, {"collection_ids": [str(factories.collection(org, "Drift docs").pk)]}


def _context(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    from knowledge.models import ContextFile

    item = ContextFile.objects.create(organization=org, name="Glossary", body="x", mode="link")
    return {}, {"context_ids": [str(item.pk)]}


def _skills(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    from knowledge.models import Skill, SkillFile

    skill = Skill.objects.create(organization=org, name="drift", description="A drift skill.", body="Read a.")
    SkillFile.objects.create(skill=skill, path="references/a.md", content="A")
    return {}, {"skill_ids": [str(skill.pk)]}


def _database(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    from agenticos import vault
    from capabilities.models import DatabaseConnection

    sealed = vault.seal(org.pk, "postgres://drift@/nowhere")
    conn = DatabaseConnection.objects.create(organization=org, name="shop", key_version=sealed.key_version,
                                             wrapped_key=sealed.wrapped_key, ciphertext=sealed.ciphertext)
    return {"connection_ids": [str(conn.pk)]}, {}


def _mem0(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    secret = factories.secret(org, "mem0 key")
    return {}, {"_binding": {"secret_id": str(secret.pk)}}


def _sandbox(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    """A workspace belongs to a real run (its scope is read from the Run row)."""
    from agents.models import Run

    owner = factories.member(org, "owner")
    agent = factories.published_agent(org, owner, name="Drift sandbox", capabilities=[{"id": "sandbox"}])
    run = Run.objects.create(organization=org, agent=agent, version=agent.versions.first(), surface="web",
                             user=owner)
    return {}, {"_deps": {"run_id": str(run.pk), "agent_id": str(agent.pk)}}


# capability id → function(org) → (binding config, extra AgentSpec fields), for data-bound capabilities
# ("_binding" in the extra fields goes onto the binding itself, e.g. a secret_id; "_deps" into the RunDeps).
SETUPS: dict[str, Callable[[Organization], tuple[dict[str, Any], dict[str, Any]]]] = {
    "knowledge": _knowledge,
    "context": _context,
    "skills": _skills,
    "database": _database,
    "memory_mem0": _mem0,
    "sandbox": _sandbox,
}

# capability id → {declared tool id: why it is not offered with the representative setup}
EXEMPT: dict[str, dict[str, str]] = {
    "sandbox": {"execute": "the stored (state) backend has no shell; only a service backend offers it, and this "
                           "deployment has no sandbox connection to publish one with"},
}

# pydantic-ai's own tools that a capability brings along (skills loads on demand through load_capability).
FRAMEWORK_TOOLS = {"load_capability"}

# Capabilities a surface grants from the arriving message (never a spec): what they offer depends on
# that message's channel, so their drift is proven through the runner where they are granted.
GRANTED_BY_SURFACE = {"channel_tools": "tests/channelbots/test_channel_tools.py"}

BUILTIN_IDS = [
    cap_id
    for cap_id in (importlib.import_module(module).CAPABILITY.id for module in registry.BUILTIN)
    if cap_id not in GRANTED_BY_SURFACE
]


def _offered(capability_id: str, **deps_overrides: Any) -> dict[str, str]:
    org = factories.organization(name="Drift")
    config, spec_fields = REPRESENTATIVE.get(capability_id, {}), {}
    if capability_id in SETUPS:
        config, spec_fields = SETUPS[capability_id](org)
    binding_extra = spec_fields.pop("_binding", {})
    deps_overrides = {**spec_fields.pop("_deps", {}), **deps_overrides}
    the_spec = AgentSpec(
        name="Drift", capabilities=[{"id": capability_id, "config": config, **binding_extra}], **spec_fields
    )
    run_deps = deps(organization_id=str(org.pk), **deps_overrides)
    script = Script([])
    agent = agent_for(the_spec, run_deps, script, output_type=[str, DeferredToolRequests])
    agent.run_sync("go", deps=run_deps)
    return {
        tool.name: tool.description or ""
        for tool in script.requests[0].function_tools
        if tool.name not in FRAMEWORK_TOOLS
    }


@pytest.mark.parametrize("capability_id", BUILTIN_IDS)
def test_declared_tools_equal_offered_tools(db, settings, tmp_path, capability_id):
    settings.SKILLS_CACHE_DIR = str(tmp_path)
    cap = registry.get(capability_id)
    settings.DEFAULT_GRANTED_SCOPES = sorted({s for c in registry.all_capabilities() for s in c.scopes})
    offered = _offered(capability_id)
    exempt = EXEMPT.get(capability_id, {})
    declared = {t.name: t.description for t in cap.tools if t.id not in exempt}
    assert set(offered) == set(declared), (
        f"{capability_id}: offered {sorted(offered)} vs declared {sorted(declared)}"
    )
    assert not set(exempt) & set(offered), (
        f"{capability_id}: stale exemption {sorted(set(exempt) & set(offered))}"
    )
    # The model reads the declared four-part text, in pydantic-ai's <summary>/<returns> shape.
    assert offered == declared
    for text in declared.values():
        assert text.startswith("<summary>") and "<returns>" in text


@pytest.mark.parametrize("can_ask_user", [True, False])
def test_ask_user_offers_the_same_declared_tool_whoever_can_answer(db, can_ask_user):
    offered = _offered("ask_user", can_ask_user=can_ask_user)
    assert set(offered) == {t.name for t in registry.get("ask_user").tools}


def test_every_exemption_and_setup_names_a_registered_capability_and_declared_tool():
    for capability_id, tools in EXEMPT.items():
        declared = registry.get(capability_id).tool_ids()
        assert set(tools) <= declared, f"{capability_id}: exemption for a tool it no longer declares"
    assert set(SETUPS) | set(REPRESENTATIVE) <= set(BUILTIN_IDS)
