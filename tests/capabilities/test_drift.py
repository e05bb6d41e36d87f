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
    # Input and tool-result edges: the output edge streams every request, which the drift script does not.
    "guardrails": {"redact_secrets_in": True, "blocked_keywords_tool": "ignore previous instructions"},
    "system_reminders": {"reminders": [{"text": "Cite your sources.", "interval": 2}]},
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


def _keyed(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    """A binding with a key of its own: any sealed secret will do, no request is made."""
    secret = factories.secret(org, "provider key")
    return {}, {"_binding": {"secret_id": str(secret.pk)}}


def _sandbox(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    """A workspace belongs to a real run (its scope is read from the Run row)."""
    from agents.models import Run

    owner = factories.member(org, "owner")
    agent = factories.published_agent(org, owner, name="Drift sandbox", capabilities=[{"id": "sandbox"}])
    run = Run.objects.create(organization=org, agent=agent, version=agent.versions.first(), surface="web",
                             user=owner)
    return {}, {"_deps": {"run_id": str(run.pk), "agent_id": str(agent.pk)}}


def _subagents(org: Organization) -> tuple[dict[str, Any], dict[str, Any]]:
    """A published delegate to name; background work and dynamic specialists on, so all that can be offered is."""
    owner = factories.member(org, "owner")
    delegate = factories.published_agent(org, owner, name="Drift delegate")
    return ({"mode": "async", "allow_dynamic": True},
            {"subagents": [{"name": "delegate", "description": "Helps.", "agent_id": str(delegate.pk)}]})


# capability id → function(org) → (binding config, extra AgentSpec fields), for data-bound capabilities
# ("_binding" in the extra fields goes onto the binding itself, e.g. a secret_id; "_deps" into the RunDeps).
SETUPS: dict[str, Callable[[Organization], tuple[dict[str, Any], dict[str, Any]]]] = {
    "knowledge": _knowledge,
    "context": _context,
    "skills": _skills,
    "database": _database,
    "memory_mem0": _keyed,
    "image_generation": _keyed,
    "text_to_speech": _keyed,
    "video_generation": _keyed,
    "sandbox": _sandbox,
    "subagents": _subagents,
}

# capability id → {declared tool id: why it is not offered with the representative setup}
EXEMPT: dict[str, dict[str, str]] = {
    "coding_agent": {"run_coding_agent": "offered only beside a sandbox on a service backend with its shell; "
                                         "tests/sandbox/test_coding_agent.py proves the offer"},
    "custom_tools": {"read_tool_result": "offered only beside an assigned custom tool, whose big responses it "
                                         "reads; tests/tools/test_spills_to_workspace.py proves the offer, its "
                                         "gate and its rename"},
    "sandbox": {"execute": "the stored (state) backend has no shell; only a service backend offers it, and this "
                           "deployment has no sandbox connection to publish one with"},
    # The other nine are offered with this setup; tests/capabilities/test_subagents.py proves the narrower offers
    # (sync only: task alone; without allow_dynamic: no create_agent/delegate).
    "subagents": {"answer_subagent": "declared so a policy can gate or rename it, offered to nobody: a sync "
                                     "delegate's question goes to the person, a background one cannot ask"},
    "follow_ups": {"suggest_next_steps": "declared so a policy can name it, never offered to the main model: a "
                                         "separate model writes the steps after the answer is committed"},
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


# ------------------------------------------------------------------ one shape for every tool text


def _docstring_tool(query: str, limit: int = 5) -> str:
    """Look a thing up in the probe index.

    Use it for probe questions; for anything else use another tool.

    Args:
        query: What to look up.
        limit: How many answers, default 5, at most 10.

    Returns:
        The answers, best first, or a sentence saying nothing matched.
    """
    return query


def test_tool_text_draws_exactly_what_pydantic_ai_draws_from_a_docstring():
    from pydantic_ai.tools import Tool

    from capabilities.base import tool_text

    drawn = Tool(_docstring_tool).tool_def.description
    ours = tool_text(
        what="Look a thing up in the probe index.",
        when="Use it for probe questions; for anything else use another tool.",
        returns="The answers, best first, or a sentence saying nothing matched.",
    )
    assert ours == drawn


def _library_arguments(tool_def) -> dict[str, Any]:
    return {name: prop.get("default") for name, prop in tool_def.parameters_json_schema["properties"].items()}


def test_read_tool_result_is_written_in_four_parts_naming_every_argument_of_the_library_tool():
    from pydantic_ai_harness.tool_output_limits import READ_TOOL_NAME, ToolOutputLimits

    library = ToolOutputLimits().get_toolset()
    [tool_def] = [t for t in library.tools.values() if t.name == READ_TOOL_NAME]  # type: ignore[union-attr]
    text = registry.get("tool_output_limits").tool(READ_TOOL_NAME).description
    summary, returns = text.split("<returns>")
    for name, default in _library_arguments(tool_def.tool_def).items():
        assert f"{name}:" in summary, f"read_tool_result's text does not describe {name}"
        if default is not None:
            assert f"default {str(default).lower()}" in summary, f"{name}'s default {default} is not said"
    # The library's caps, read from where it keeps them, so a change there fails here.
    from pydantic_ai_harness.tool_output_limits import _capability as harness

    assert f"at most {harness._MAX_READ_LINES:,}" in summary
    assert f"{harness._MAX_READ_CHARS:,} characters" in returns and "slice" in returns
    assert "unknown or expired handle" in returns  # what a failure looks like
    assert text != tool_def.tool_def.description


async def test_search_tools_reaches_the_model_in_our_four_part_text_and_names_its_only_argument():
    from pydantic_ai.tools import Tool
    from pydantic_ai.toolsets import FunctionToolset

    from capabilities.tool_search.capability import SEARCH_QUERIES_TEXT, SEARCH_TOOLS_TEXT

    def create_invoice(amount: int) -> str:
        """Create an invoice.

        Returns:
            The invoice id.
        """
        return "inv-1"

    # keywords: the search runs here, which is where the model reads our text (native search has none).
    binding = {"id": "tool_search", "config": {"strategy": "keywords"}}
    built = registry.build_for_run(AgentSpec(name="Search", capabilities=[binding]), deps())
    deferred = FunctionToolset([Tool(create_invoice, defer_loading=True)])
    built.toolsets.append(deferred)
    script = Script([])
    agent = agent_for(AgentSpec(name="Search"), deps(), script, built=built)
    await agent.run("go", deps=deps())
    [search] = [t for t in script.requests[0].function_tools if t.name == "search_tools"]
    assert search.description == SEARCH_TOOLS_TEXT
    assert search.description.startswith("<summary>") and "<returns>" in search.description
    assert set(search.parameters_json_schema["properties"]) == {"queries"}
    assert "queries:" in SEARCH_TOOLS_TEXT
    assert search.parameters_json_schema["properties"]["queries"]["description"] == SEARCH_QUERIES_TEXT
    assert "create_invoice" not in {t.name for t in script.requests[0].function_tools}


def test_every_capability_without_tools_says_why_and_so_does_one_the_catalog_lists_without_tools():
    for cap in registry.all_capabilities():
        if not cap.tools:
            assert cap.tools_note.strip(), f"{cap.id} declares tools=() without saying why"
    # The spec lists clock without tools, on purpose: the time is in the instructions, and its entry says so.
    clock = registry.get("clock")
    assert not clock.tools and "instructions" in clock.tools_note
    entry = next(c for c in registry.catalog_json()["capabilities"] if c["id"] == "clock")
    assert entry["tools_note"] == clock.tools_note
