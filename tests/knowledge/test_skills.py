"""skills: bound skills load on demand (pydantic-ai's load_capability), read_skill_resource only when a bound
skill has a file, run_skill_script never; REST with front matter checks; proposals decided by skills:edit."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agenticos.models import AuditEvent
from knowledge import skills as skill_store
from knowledge.models import Skill, SkillFile, SkillProposal
from tests import factories
from tests.knowledge.helpers import arun

SKILL_MD = "---\nname: postmortem\ndescription: How we write incident post-mortems.\n---\n\nUse the template in references/template.md."


@pytest.fixture(autouse=True)
def _cache(settings, tmp_path):
    settings.SKILLS_CACHE_DIR = str(tmp_path / "skills-cache")


def _skill(org, name="postmortem", files=()):
    skill = Skill.objects.create(organization=org, name=name, description=f"About {name}.",
                                 body="Use the template in references/template.md.")
    for path, content in files:
        SkillFile.objects.create(skill=skill, path=path, content=content)
    return skill


def _agent(org, owner, skills):
    return factories.published_agent(org, owner, capabilities=[{"id": "skills"}], skill_ids=[str(s.pk) for s in skills])


@pytest.mark.django_db(transaction=True)
async def test_a_skill_with_a_file_offers_exactly_the_declared_tool_plus_load_capability(org, owner):
    """The drift test: what the registry declares is what the model is offered (besides the framework's own)."""
    from capabilities import registry

    skill = await sync_to_async(_skill)(org, files=[("references/template.md", "## Timeline\n## Root cause")])
    agent = await sync_to_async(_agent)(org, owner, [skill])
    outcome, built = await arun(agent, [("load_capability", {"id": "postmortem"}),
                                        ("read_skill_resource", {"skill_name": "postmortem",
                                                                 "resource_name": "references/template.md"})],
                                user=owner)
    declared = {t.name for t in registry.get("skills").tools}
    assert set(outcome.script.offered) - {"load_capability"} == declared == {"read_skill_resource"}
    assert "run_skill_script" not in outcome.script.offered
    assert "About postmortem." in str(outcome.script.requests[0].instructions) + str(
        [t.description for t in outcome.script.requests[0].function_tools])
    assert "## Root cause" in str(outcome.returns[-1])


@pytest.mark.django_db(transaction=True)
async def test_a_skill_without_files_offers_no_resource_tool(org, owner):
    skill = await sync_to_async(_skill)(org)
    agent = await sync_to_async(_agent)(org, owner, [skill])
    outcome, built = await arun(agent, [], user=owner)
    assert "skills" in built.active and "read_skill_resource" not in outcome.script.offered


@pytest.mark.django_db(transaction=True)
async def test_no_bound_skill_or_a_foreign_one_attaches_nothing(org, owner, outsider_org):
    foreign = await sync_to_async(_skill)(outsider_org, name="theirs")
    agent = await sync_to_async(_agent)(org, owner, [])

    def add_version():
        from agents.models import AgentVersion

        latest = agent.versions.order_by("-number").first()
        AgentVersion.objects.create(agent=agent, number=latest.number + 1,
                                    spec={**latest.spec, "skill_ids": [str(foreign.pk)]})

    await sync_to_async(add_version)()
    outcome, built = await arun(agent, [], user=owner)
    assert "skills" not in built.active and outcome.script.offered == []


@pytest.mark.django_db
def test_materializing_writes_skill_md_and_files_once_per_version(org):
    skill = _skill(org, files=[("references/a.md", "A")])
    first = skill_store.materialize([skill])
    assert (first / "postmortem" / "SKILL.md").read_text().startswith("---\nname: postmortem\n")
    assert (first / "postmortem" / "references" / "a.md").read_text() == "A"
    assert skill_store.materialize([skill]) == first
    skill_store.update_skill(actor=_actor(org), skill=skill, files=[{"path": "references/a.md", "content": "B"}])
    second = skill_store.materialize([Skill.objects.get(pk=skill.pk)])
    assert second != first and (second / "postmortem" / "references" / "a.md").read_text() == "B"


def _actor(org):
    from agenticos.tenancy import Actor

    return Actor(user=None, organization=org, role="owner")


@pytest.mark.django_db
def test_skills_crud_checks_front_matter_and_paths(api_as, builder, org):
    client = api_as(builder, org)
    created = client.post("/api/v1/skills", {"skill_md": SKILL_MD, "files": [
        {"path": "references/template.md", "content": "T"}]}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["name"] == "postmortem" and created.json()["files"] == [
        {"path": "references/template.md", "content": "T"}]
    pk = created.json()["id"]
    bad_name = client.post("/api/v1/skills", {"skill_md": "---\nname: Bad Name\ndescription: x\n---\nbody"},
                           format="json")
    assert bad_name.status_code == 422
    no_front = client.post("/api/v1/skills", {"skill_md": "just text"}, format="json")
    assert no_front.status_code == 422 and "front matter" in no_front.json()["error"]["message"]
    escape = client.patch(f"/api/v1/skills/{pk}", {"files": [{"path": "../../etc/passwd", "content": "x"}]},
                          format="json")
    assert escape.status_code == 422
    assert client.delete(f"/api/v1/skills/{pk}").status_code == 204


@pytest.mark.django_db
def test_skill_endpoints_are_tenant_scoped_and_need_knowledge_manage(api_as, outsider, outsider_org, viewer, org):
    skill = _skill(org)
    foreign = api_as(outsider, outsider_org)
    assert foreign.get(f"/api/v1/skills/{skill.pk}").status_code == 404
    assert foreign.patch(f"/api/v1/skills/{skill.pk}", {"skill_md": SKILL_MD}, format="json").status_code == 404
    assert foreign.delete(f"/api/v1/skills/{skill.pk}").status_code == 404
    assert foreign.get("/api/v1/skills").json()["results"] == []
    weak = api_as(viewer, org)
    assert weak.post("/api/v1/skills", {"skill_md": SKILL_MD}, format="json").status_code == 403
    assert weak.patch(f"/api/v1/skills/{skill.pk}", {"skill_md": SKILL_MD}, format="json").status_code == 403
    assert weak.delete(f"/api/v1/skills/{skill.pk}").status_code == 403


@pytest.mark.django_db
def test_an_agents_edit_is_a_proposal_until_someone_with_skills_edit_accepts_it(api_as, builder, member, org,
                                                                                outsider, outsider_org):
    skill = _skill(org, files=[("references/template.md", "old")])
    proposal = skill_store.propose_edit(organization_id=str(org.pk), skill_id=str(skill.pk),
                                        path="references/template.md", content="new")
    assert SkillFile.objects.get(skill=skill).content == "old"
    assert api_as(member, org).post(f"/api/v1/skills/proposals/{proposal.pk}/accept").status_code == 403
    assert api_as(outsider, outsider_org).post(f"/api/v1/skills/proposals/{proposal.pk}/accept").status_code == 404
    assert [p["id"] for p in api_as(builder, org).get("/api/v1/skills/proposals").json()["results"]] == [str(proposal.pk)]
    assert api_as(builder, org).post(f"/api/v1/skills/proposals/{proposal.pk}/accept").json()["status"] == "accepted"
    assert SkillFile.objects.get(skill=skill).content == "new"
    assert api_as(builder, org).post(f"/api/v1/skills/proposals/{proposal.pk}/discard").status_code == 409
    discarded = skill_store.propose_edit(organization_id=str(org.pk), skill_id=str(skill.pk),
                                         path="references/template.md", content="worse")
    api_as(builder, org).post(f"/api/v1/skills/proposals/{discarded.pk}/discard")
    assert SkillFile.objects.get(skill=skill).content == "new"
    assert SkillProposal.objects.get(pk=discarded.pk).status == "discarded"
    assert AuditEvent.objects.filter(action__startswith="skill.proposal_").count() == 2
