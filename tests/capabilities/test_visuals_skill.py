"""The bundled visual-design skill ships with Visuals (capabilities/skills/bundled/): an agent that binds Visuals can
load it — its style guide and five templates, each a drawing `draw` accepts — whether or not it binds Skills, in one
catalog with the organization's skills, where an organization's own skill of that name wins; an agent without
Visuals never gets it."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async

from capabilities.skills import bundled
from capabilities.visuals.capability import _problems
from knowledge import skills as skill_store
from knowledge.models import Skill, SkillFile
from tests import factories
from tests.knowledge.helpers import arun

SKILL = (bundled.LIBRARY / "visual-design" / "SKILL.md").read_text()
TEMPLATE_RE = re.compile(r"## Template (\d) — [^\n]*\n.*?```(svg|mermaid|html)\n(.*?)```", re.DOTALL)


@pytest.fixture(autouse=True)
def _cache(settings, tmp_path):
    settings.SKILLS_CACHE_DIR = str(tmp_path / "skills-cache")


def _agent(org, owner, capabilities, skills=()):
    return factories.published_agent(org, owner, capabilities=[{"id": c} for c in capabilities],
                                     skill_ids=[str(s.pk) for s in skills])


def _loaded(outcome, step: int = 1) -> str:
    """What the model was sent at a request: after a load_capability call, the loaded skill's instructions."""
    return str(outcome.script.sent[step][-1])


def test_the_skill_is_a_valid_skill_with_a_style_guide_and_five_templates_draw_accepts(settings):
    name, description, body = skill_store.parse(SKILL)
    assert name == "visual-design" and "five templates" in description
    assert "## First choose the form" in body and "create_chart" in body and "Markdown table" in body
    assert "No pills, no shadows, no gradients" in body
    templates = TEMPLATE_RE.findall(body)
    assert [t[0] for t in templates] == ["1", "2", "3", "4", "5"]
    # Every template, and the map's outline for a deployment without tiles, is a drawing draw would show.
    outline = re.search(r"Without a tile server:\n\n```svg\n(.*?)```", body, re.DOTALL)
    assert outline is not None
    for kind, content in [(k, c) for _, k, c in templates] + [("svg", outline.group(1))]:
        assert _problems(kind, content, []) == [], (kind, content[:60])


@pytest.mark.django_db(transaction=True)
async def test_an_agent_with_visuals_alone_loads_the_skill_without_a_file_tool(org, owner):
    agent = await sync_to_async(_agent)(org, owner, ["visuals"])
    outcome, built = await arun(agent, [("load_capability", {"id": "visual-design"})], user=owner)
    assert set(outcome.script.offered) == {"draw", "revise_visual", "read_visual", "load_capability"}
    loaded = _loaded(outcome)
    assert "Template 5 — a 3D scene" in loaded and "Only the theme colours" in loaded
    assert "visual-design skill" in str(outcome.script.requests[0].instructions)


@pytest.mark.django_db(transaction=True)
async def test_with_skills_bound_it_joins_the_organizations_skills_in_one_catalog(org, owner):
    def setup():
        skill = Skill.objects.create(organization=org, name="postmortem", description="How we write post-mortems.",
                                     body="Use references/template.md.")
        SkillFile.objects.create(skill=skill, path="references/template.md", content="## Timeline")
        return _agent(org, owner, ["visuals", "skills"], [skill])

    agent = await sync_to_async(setup)()
    outcome, built = await arun(agent, [("load_capability", {"id": "visual-design"}),
                                        ("load_capability", {"id": "postmortem"}),
                                        ("read_skill_resource", {"skill_name": "postmortem",
                                                                 "resource_name": "references/template.md"})],
                                user=owner)
    assert outcome.script.offered.count("read_skill_resource") == 1
    assert "Template 1 — a diagram" in _loaded(outcome) and "Template 1" not in _loaded(outcome, 0)
    assert "## Timeline" in str(outcome.returns[-1])


@pytest.mark.django_db(transaction=True)
async def test_an_organizations_own_visual_design_skill_wins(org, owner):
    def setup():
        mine = Skill.objects.create(organization=org, name="visual-design", description="Our house style.",
                                    body="Always draw in green.")
        return _agent(org, owner, ["visuals", "skills"], [mine])

    agent = await sync_to_async(setup)()
    outcome, _ = await arun(agent, [("load_capability", {"id": "visual-design"})], user=owner)
    loaded = _loaded(outcome)
    assert "Always draw in green." in loaded and "Template 1" not in loaded


@pytest.mark.django_db(transaction=True)
async def test_an_agent_without_visuals_never_gets_it(org, owner):
    def setup():
        skill = Skill.objects.create(organization=org, name="postmortem", description="How we write post-mortems.",
                                     body="Write it.")
        return _agent(org, owner, ["skills", "charts"], [skill])

    agent = await sync_to_async(setup)()
    outcome, _ = await arun(agent, [("load_capability", {"id": "visual-design"})], user=owner)
    assert "visual-design" not in str(outcome.script.requests[0].function_tools)
    assert "Template 1" not in _loaded(outcome)


@pytest.mark.django_db(transaction=True)
async def test_skills_bound_where_the_deployment_no_longer_lets_it_run_still_leaves_the_skill(org, owner, settings):
    agent = await sync_to_async(_agent)(org, owner, ["visuals", "skills"])
    # Published while granted; the deployment has withdrawn the scope since.
    settings.DEFAULT_GRANTED_SCOPES = [s for s in settings.DEFAULT_GRANTED_SCOPES if s != "knowledge:read"]
    outcome, built = await arun(agent, [("load_capability", {"id": "visual-design"})], user=owner)
    assert "skills" in built.skipped and "Template 1 — a diagram" in _loaded(outcome)
