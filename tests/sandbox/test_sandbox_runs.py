"""Capability sandbox (backend state) through the real runner: files that outlive the turn, who shares them
(session_scope), refused paths, the byte cap, attachments in /workspace/uploads, skills as files whose edits
become proposals, and publish refusing service-only settings on stored files (a service workspace without a
connection: tests/sandbox/test_connections.py)."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from agenticos.errors import Invalid
from agents import services as agent_services
from agents.models import Conversation, RunStatus
from knowledge.models import Skill, SkillFile, SkillProposal
from tests import factories
from tests.runner.conftest import actor_of, publish
from tests.runner.test_execute import run_now, start
from tests.sandbox.helpers import ToolScript
from workspaces import store
from workspaces.models import Workspace, WorkspaceFile

pytestmark = pytest.mark.django_db(transaction=True)

FILE_TOOLS = ["edit_file", "glob", "grep", "ls", "read_file", "write_file"]


def turn(scripted_model, org, user, agent_version, calls, *, conversation=None, **kw) -> tuple[ToolScript, object]:
    script = ToolScript(calls)
    scripted_model(script.model())
    agent, version = agent_version
    if conversation is None:
        run = start(org, user, agent, version, prompt="work", **kw)
    else:
        from agents.runs import start_run

        run = start_run(agent=agent, version=version, surface="web", prompt="work", user=user, acting_role="owner",
                        conversation=conversation, enqueue=False, **kw)
    run_now(run)
    run.refresh_from_db()
    return script, run


def sandbox(org, owner, **config):
    return publish(org, owner, capabilities=[{"id": "sandbox", "config": config}])


def test_files_outlive_the_turn_in_the_same_conversation_and_no_shell_is_offered(org, owner, scripted_model):
    agent = sandbox(org, owner)
    first, run = turn(scripted_model, org, owner, agent, [
        ("write_file", {"path": "notes.md", "content": "Ship on Friday.\n"}),
        ("ls", {}),
    ])
    assert run.status == RunStatus.COMPLETED
    assert first.offered == FILE_TOOLS
    assert first.results[0] == "Wrote 1 lines to notes.md" and "notes.md" in first.results[1]
    assert WorkspaceFile.objects.filter(path="/workspace/notes.md").exists()
    assert "no shell" in first.instructions[0] and "/workspace" in first.instructions[0]

    second, _ = turn(scripted_model, org, owner, agent, [("read_file", {"path": "/workspace/notes.md"})],
                     conversation=run.conversation)
    assert "Ship on Friday." in second.results[0]

    elsewhere, _ = turn(scripted_model, org, owner, agent, [("read_file", {"path": "notes.md"})])
    assert "Ship on Friday." not in elsewhere.results[0]  # conversation scope: another chat, other files


def test_scope_user_follows_the_person_and_scope_agent_is_shared_scope_run_forgets(org, owner, scripted_model):
    colleague = factories.member(org, "member")
    personal = sandbox(org, owner, session_scope="user")
    turn(scripted_model, org, owner, personal, [("write_file", {"path": "mine.md", "content": "owner's"})])
    again, _ = turn(scripted_model, org, owner, personal, [("read_file", {"path": "mine.md"})])
    assert "owner's" in again.results[0]
    other, _ = turn(scripted_model, org, colleague, personal, [("read_file", {"path": "mine.md"})])
    assert "owner's" not in other.results[0]

    shared = sandbox(org, owner, session_scope="agent")
    turn(scripted_model, org, owner, shared, [("write_file", {"path": "team.md", "content": "team facts"})])
    seen, _ = turn(scripted_model, org, colleague, shared, [("read_file", {"path": "team.md"})])
    assert "team facts" in seen.results[0]
    assert "everyone who talks to this agent" in seen.instructions[0]

    once = sandbox(org, owner, session_scope="run")
    _, run = turn(scripted_model, org, owner, once, [("write_file", {"path": "tmp.md", "content": "scratch"})])
    later, _ = turn(scripted_model, org, owner, once, [("read_file", {"path": "tmp.md"})],
                    conversation=run.conversation)
    assert "scratch" not in later.results[0]


def test_an_outsider_organizations_agent_never_reaches_these_files(org, owner, outsider_org, scripted_model):
    agent = sandbox(org, owner, session_scope="agent")
    turn(scripted_model, org, owner, agent, [("write_file", {"path": "plan.md", "content": "acme plan"})])
    outsider_owner = factories.member(outsider_org, "owner")
    theirs = sandbox(outsider_org, outsider_owner, session_scope="agent")
    seen, _ = turn(scripted_model, outsider_org, outsider_owner, theirs, [("grep", {"pattern": "acme"})])
    assert "acme plan" not in seen.results[0] and "No matches" in seen.results[0]
    assert Workspace.objects.filter(organization=outsider_org).count() == 1


def test_credentials_and_system_paths_are_refused_and_grep_never_returns_their_lines(org, owner, scripted_model):
    agent = sandbox(org, owner, session_scope="agent")
    _, run = turn(scripted_model, org, owner, agent, [("write_file", {"path": "readme.md", "content": "token here"})])
    workspace = Workspace.objects.get(agent=agent[0])
    store.write(workspace.pk, "/workspace/.env", b"API_TOKEN=token-xyz", run_id=None)  # e.g. put there earlier

    script, run = turn(scripted_model, org, owner, agent, [
        ("write_file", {"path": "/workspace/deploy.pem", "content": "-----BEGIN"}),
        ("read_file", {"path": ".env"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("grep", {"pattern": "token", "output_mode": "content"}),
        ("ls", {"path": "/workspace"}),
    ])
    pem, env, passwd, grep, listing = script.results
    assert run.status == RunStatus.COMPLETED
    credential = "Permission denied: credential files are never read, written or edited here"
    # pydantic-ai-backend's guard raises on a refused path; its tool wrapper turns that into this result
    assert (pem, env) == ("Error: " + credential, "Error: " + credential)
    assert passwd == "Error: Permission denied: system paths are outside your workspace"
    assert "token-xyz" not in grep and "readme.md" in grep
    assert ".env" in listing  # names are not secret; only content is withheld
    assert not WorkspaceFile.objects.filter(path__endswith=".pem").exists()


def test_a_full_workspace_refuses_the_write_readably_and_the_run_goes_on(org, owner, scripted_model, settings):
    settings.SANDBOX_STATE_MAX_BYTES = 1024
    agent = sandbox(org, owner)
    script, run = turn(scripted_model, org, owner, agent, [
        ("write_file", {"path": "small.txt", "content": "x" * 600}),
        ("write_file", {"path": "big.txt", "content": "y" * 600}),
        ("write_file", {"path": "small.txt", "content": "z" * 900}),
    ])
    small, big, rewrite = script.results
    assert "small.txt" in small
    assert "The workspace is full: 600 of 1,024 bytes are in use" in big
    assert "small.txt" in rewrite  # replacing a file counts the new size only
    assert run.status == RunStatus.COMPLETED
    assert store.used_bytes(Workspace.objects.get().pk) == 900


def test_a_failed_run_keeps_the_files_it_wrote(org, owner, scripted_model):
    agent = sandbox(org, owner)
    script = ToolScript([("write_file", {"path": "partial.md", "content": "half done"})])
    model = script.model()
    inner = model.stream_function

    async def failing(messages, info):
        if script.step >= 1:
            raise RuntimeError("provider fell over")
        async for item in inner(messages, info):
            yield item

    model.stream_function = failing
    scripted_model(model)
    run = start(org, owner, *agent, prompt="work")
    run_now(run)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert bytes(WorkspaceFile.objects.get(path="/workspace/partial.md").data) == b"half done"


def test_attachments_land_in_uploads_and_the_prompt_says_where(org, owner, scripted_model):
    agent = sandbox(org, owner)
    path = default_storage.save("test-attachments/sales.csv", ContentFile(b"month,total\nMarch,12\n"))
    files = [{"file_id": "f1", "name": "sales.csv", "mime": "text/csv", "size": 21, "path": path}]
    script, run = turn(scripted_model, org, owner, agent, [("read_file", {"path": "/workspace/uploads/sales.csv"})],
                       attachments=files)
    prompt = "\n".join(str(p) for p in script.prompts)
    assert "It is in your workspace at /workspace/uploads/sales.csv" in prompt
    assert "March,12" not in prompt  # not folded: the agent reads it when it needs it
    assert "March,12" in script.results[0]
    assert store.outputs(str(run.pk)) == []  # the person's own file is never a reply attachment


def test_skills_are_files_and_an_edit_becomes_a_proposal_not_a_change(org, owner, scripted_model):
    skill = Skill.objects.create(organization=org, name="refunds", description="Refund replies.",
                                 body="Always apologise first.")
    SkillFile.objects.create(skill=skill, path="templates/reply.md", content="Dear {name},")
    agent = publish(org, owner, capabilities=[{"id": "sandbox"}, {"id": "skills"}], skill_ids=[str(skill.pk)])
    script, run = turn(scripted_model, org, owner, agent, [
        ("read_file", {"path": "/workspace/skills/refunds/SKILL.md"}),
        ("edit_file", {"path": "/workspace/skills/refunds/templates/reply.md", "old_string": "Dear",
                       "new_string": "Hello"}),
    ])
    assert "Always apologise first." in script.results[0]
    assert "/workspace/skills/<name>/ (refunds)" in script.instructions[0]
    proposal = SkillProposal.objects.get()
    assert (proposal.skill_id, proposal.path, proposal.content, proposal.status) == (
        skill.pk, "templates/reply.md", "Hello {name},", SkillProposal.Status.PENDING)
    assert str(proposal.run_id) == str(run.pk)
    assert SkillFile.objects.get(skill=skill).content == "Dear {name},"  # the skill itself is unchanged

    again, _ = turn(scripted_model, org, owner, agent, [
        ("read_file", {"path": "/workspace/skills/refunds/templates/reply.md"})], conversation=run.conversation)
    assert "Dear {name}," in again.results[0]  # materialized from the skill as it stands


@pytest.mark.parametrize(("config", "reason"), [
    ({"runtime": "python"}, "runtime applies to a service workspace only"),
    ({"connection_id": "c1"}, "connection_id applies to a service workspace only"),
])
def test_publish_refuses_service_settings_on_stored_files_by_name(org, owner, config, reason):
    agent, _ = publish(org, owner)
    agent.draft_spec = {**agent.draft_spec, "capabilities": [{"id": "sandbox", "config": config}]}
    agent.save(update_fields=["draft_spec"])
    with pytest.raises(Invalid) as caught:
        agent_services.publish_agent(actor=actor_of(owner, org), agent=agent, note="service")
    assert reason in str(caught.value.details)


def test_deleting_the_conversation_deletes_its_workspace(org, owner, scripted_model):
    agent = sandbox(org, owner)
    _, run = turn(scripted_model, org, owner, agent, [("write_file", {"path": "a.md", "content": "a"})])
    assert WorkspaceFile.objects.count() == 1
    Conversation.objects.filter(pk=run.conversation_id).delete()
    assert not Workspace.objects.exists() and not WorkspaceFile.objects.exists()


def test_sharing_a_workspace_across_people_is_recorded_in_the_audit_log(org, owner):
    from agenticos.models import AuditEvent

    agent, version = sandbox(org, owner, session_scope="agent")
    entry = AuditEvent.objects.get(action="agent.workspace_shared")
    assert entry.details == {"version": version.number, "scope": "agent"}
    sandbox(org, owner, session_scope="user")
    assert AuditEvent.objects.filter(action="agent.workspace_shared").count() == 1


def test_a_binding_refuses_an_unknown_workspace_scope(org, owner):
    from channelbots import services as bots

    agent, _ = sandbox(org, owner)
    bot = bots.create_bot(actor=actor_of(owner, org), data={"platform": "telegram", "name": "T", "token": "123456:ABCdefGHIjklMNOpqrSTUvwxYZ012345678"})
    with pytest.raises(Invalid) as caught:
        bots.create_binding(actor=actor_of(owner, org), agent=agent, data={"bot_id": str(bot.pk),
                                                                          "workspace_scope": "everyone"})
    assert caught.value.details == {"field": "workspace_scope"}


def test_a_turn_workspace_outside_any_conversation_is_swept_once_its_run_ended(org, owner, scripted_model):
    import datetime as dt

    from django.utils import timezone

    from capabilities.tasks import sweep_turn_workspaces

    agent = sandbox(org, owner, session_scope="run")
    scripted_model(ToolScript([("write_file", {"path": "a.md", "content": "a"})]).model())
    finished = start(org, owner, *agent, prompt="work", conversation=False)  # an API-style run, no chat
    run_now(finished)
    finished.refresh_from_db()
    _, kept = turn(scripted_model, org, owner, agent, [("write_file", {"path": "b.md", "content": "b"})])
    recent = type(kept).objects.create(organization=org, agent=agent[0], version=agent[1], surface="api",
                                       user=owner, status="completed")
    recent_workspace = Workspace.objects.create(organization=org, agent=agent[0], scope="run", key=str(recent.pk))
    old = timezone.now() - dt.timedelta(hours=1)
    Workspace.objects.update(last_used_at=old)
    type(finished).objects.filter(pk=finished.pk).update(finished_at=old)
    type(recent).objects.filter(pk=recent.pk).update(finished_at=timezone.now())
    assert finished.conversation_id is None and kept.conversation_id is not None

    assert sweep_turn_workspaces() == 1
    assert not Workspace.objects.filter(key=str(finished.pk)).exists()
    assert Workspace.objects.filter(key=str(kept.pk), conversation__isnull=False).exists()  # its chat lists it
    assert Workspace.objects.filter(pk=recent_workspace.pk).exists()  # its run finished moments ago: within the grace


def test_a_skill_no_longer_bound_leaves_the_workspace(org, owner, scripted_model):
    skill = Skill.objects.create(organization=org, name="refunds", description="Refund replies.", body="Apologise.")
    agent = publish(org, owner, capabilities=[{"id": "sandbox", "config": {"session_scope": "agent"}},
                                              {"id": "skills"}], skill_ids=[str(skill.pk)])
    turn(scripted_model, org, owner, agent, [("write_file", {"path": "mine.md", "content": "kept"})])
    assert WorkspaceFile.objects.filter(path="/workspace/skills/refunds/SKILL.md").exists()

    actor = actor_of(owner, org)
    agent[0].draft_spec = {**agent[0].draft_spec, "skill_ids": [],
                           "capabilities": [{"id": "sandbox", "config": {"session_scope": "agent"}}]}
    agent[0].save(update_fields=["draft_spec"])
    version = agent_services.publish_agent(actor=actor, agent=agent[0], note="no skills")
    script, _ = turn(scripted_model, org, owner, (agent[0], version), [("glob", {"pattern": "**/*.md"})])
    assert "SKILL.md" not in script.results[0] and "mine.md" in script.results[0]
    assert not WorkspaceFile.objects.filter(path__startswith="/workspace/skills/").exists()
