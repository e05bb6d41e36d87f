"""Drift for the knowledge capabilities: with data bound, the tools offered are exactly the declared ones
(plus pydantic-ai's own load_capability for skills), in the <summary>/<returns> shape."""

from __future__ import annotations

import pytest
from pydantic_ai import DeferredToolRequests

from agents.spec import AgentSpec
from capabilities import registry
from knowledge.models import ContextFile, Skill, SkillFile
from tests import factories
from tests.capabilities.helpers import Script, agent_for, deps


def _setup(capability_id, org):
    if capability_id == "knowledge":
        return {"collection_ids": [str(factories.collection(org, "Drift docs").pk)]}
    if capability_id == "context":
        item = ContextFile.objects.create(organization=org, name="Glossary", body="x", mode="link")
        return {"context_ids": [str(item.pk)]}
    if capability_id == "skills":
        skill = Skill.objects.create(organization=org, name="drift", description="A drift skill.", body="Read a.")
        SkillFile.objects.create(skill=skill, path="references/a.md", content="A")
        return {"skill_ids": [str(skill.pk)]}
    return {}


@pytest.mark.parametrize("capability_id", ["knowledge", "context", "skills", "memory_files", "conversation_search"])
def test_declared_tools_equal_offered_tools_with_data_bound(db, settings, tmp_path, capability_id):
    settings.SKILLS_CACHE_DIR = str(tmp_path)
    settings.DEFAULT_GRANTED_SCOPES = ["knowledge:read", "conversations:read"]
    org = factories.organization(name="Drift")
    spec = AgentSpec(name="Drift", capabilities=[{"id": capability_id}], **_setup(capability_id, org))
    script = Script([])
    run_deps = deps(organization_id=str(org.pk))
    agent_for(spec, run_deps, script, output_type=[str, DeferredToolRequests]).run_sync("go", deps=run_deps)
    offered = {t.name: t.description for t in script.requests[0].function_tools}
    offered.pop("load_capability", None)  # pydantic-ai's own tool for deferred capabilities (skills)
    declared = {t.name: t.description for t in registry.get(capability_id).tools}
    assert offered == declared
    assert all(text.startswith("<summary>") and "<returns>" in text for text in declared.values())
