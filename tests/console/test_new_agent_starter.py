"""New agent and the starter template (spec: "Recommended" is what the starter binds; New agent starts with
exactly those, configured as the template configures them, with its instructions, skills, platform tools
and budget). One source: each capability's `recommended` flag; the bootstrap's starter and the badge follow."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from agents.models import Agent
from capabilities import registry
from capabilities.base import Capability
from knowledge.models import Skill
from tests import factories
from tests.runner.conftest import actor_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def probe_recommended():
    cap = registry.register(Capability(
        id="probe_recommended", name="Probe recommended", category="utility", description="A test capability.",
        offers="probing what the starter binds", tools=(), tools_note="test", recommended=True,
        build=lambda ctx: []))
    yield cap
    registry.unregister(cap.id)


def _starter(org, owner, **spec):
    from agents import services as agent_services

    profile = factories.model_profile(org, label="Demo")
    data = {"name": "Getting Started", "instructions": "Our own starter words.", "model_profile_id": str(profile.pk),
            **spec}
    return agent_services.create_agent(actor=actor_of(owner, org), slug="getting-started", spec=data)


def test_the_bootstrap_starter_binds_exactly_what_is_marked_recommended(probe_recommended):
    call_command("platform_bootstrap", stdout=io.StringIO(), stderr=io.StringIO())
    agent = Agent.objects.get(organization__slug="acme", slug="getting-started")
    recommended = [c["id"] for c in registry.catalog_json()["capabilities"] if c["recommended"] and c["available"]]
    assert "probe_recommended" in recommended
    assert [b["id"] for b in agent.draft_spec["capabilities"]] == recommended
    # The instructions name what each bound capability offers, so they cannot drift from the list either.
    assert "- probing what the starter binds (probe_recommended)" in agent.draft_spec["instructions"]
    assert agent.versions.get().spec["capabilities"] == agent.draft_spec["capabilities"]


def test_new_agent_copies_the_starters_skills_tools_budget_and_recommended_configs_only(
        client_as, org, owner, builder):
    skill = Skill.objects.create(organization=org, name="tone", description="House tone.", body="Be kind.")
    tool = factories.custom_tool(org, url="https://api.example.com/orders")
    _starter(org, owner, skill_ids=[str(skill.pk)], custom_tool_ids=[str(tool.pk)], budget={"monthly_usd": "12"},
             capabilities=[{"id": "clock", "config": {"timezone": "Europe/Warsaw"}},
                           {"id": "knowledge", "config": {"default_top_k": 9}}])
    response = client_as(builder, org).post("/agents/new", {"name": "Support"})
    assert response.status_code == 302
    agent = Agent.objects.get(organization=org, name="Support")
    spec = agent.draft_spec
    assert spec["skill_ids"] == [str(skill.pk)] and spec["custom_tool_ids"] == [str(tool.pk)]
    assert spec["instructions"] == "Our own starter words." and spec["budget"]["monthly_usd"] == "12"
    bindings = {b["id"]: b for b in spec["capabilities"]}
    assert bindings["clock"]["config"] == {"timezone": "Europe/Warsaw"}
    assert "knowledge" not in bindings  # bound by the template, but not Recommended
    assert set(bindings) == {c.id for c in registry.all_capabilities() if c.recommended and c.selectable}


def test_another_organizations_starter_is_never_copied(client_as, org, builder, outsider_org, outsider):
    theirs = Skill.objects.create(organization=outsider_org, name="secret-sauce", description="x", body="x")
    _starter(outsider_org, outsider, skill_ids=[str(theirs.pk)], instructions="Outsider words.")
    factories.model_profile(org, label="Demo")
    client_as(builder, org).post("/agents/new", {"name": "Support"})
    spec = Agent.objects.get(organization=org, name="Support").draft_spec
    assert spec["skill_ids"] == [] and "Outsider words." not in spec["instructions"]
    assert spec["instructions"].startswith("You are Support, an assistant on AgenticOS.")  # its own name


def test_a_viewer_cannot_create_an_agent_from_the_starter(client_as, org, viewer):
    factories.model_profile(org, label="Demo")
    response = client_as(viewer, org).post("/agents/new", {"name": "Nope"})
    assert response.status_code == 403
    assert not Agent.objects.filter(organization=org, name="Nope").exists()
