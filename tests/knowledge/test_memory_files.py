"""memory_files: one store per run derived from who hears the answer; five tools; MEMORY.md injection rules."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from knowledge.models import MemoryNote
from tests import factories
from tests.knowledge.helpers import arun

pytestmark = pytest.mark.django_db(transaction=True)

GROUP = {"surface": "slack", "options": {"chat_type": "group", "chat_key": "C-team"}}


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, capabilities=[{"id": "memory_files"}])


def _note(agent, name, content, user=None, chat_key=""):
    return MemoryNote.objects.create(organization_id=agent.organization_id, agent=agent, owner_user=user,
                                     chat_key=chat_key, name=name, content=content)


def _instructions(outcome) -> str:
    return outcome.script.requests[-1].instructions or ""


async def test_the_five_tools_work_on_the_persons_store(agent, owner):
    outcome, _ = await arun(agent, [
        ("write_memory", {"name": "prefs.md", "content": "Likes metric units."}),
        ("edit_memory", {"name": "prefs.md", "old_text": "metric", "new_text": "imperial"}),
        ("read_memory", {"name": "prefs.md"}),
        ("list_memory", {}),
        ("delete_memory", {"name": "prefs.md"}),
        ("read_memory", {"name": "prefs.md"}),
    ], user=owner)
    saved, edited, read, listing, deleted, gone = outcome.returns
    assert saved.startswith("Saved new note 'prefs.md'") and edited == "Edited note 'prefs.md'."
    assert read == "Likes imperial units." and listing.startswith("- prefs.md (21 characters")
    assert deleted == "Deleted note 'prefs.md'." and gone.startswith("There is no note")
    assert sorted(outcome.script.offered) == ["delete_memory", "edit_memory", "list_memory", "read_memory",
                                              "write_memory"]


async def test_the_index_is_injected_in_a_one_to_one_conversation(agent, owner):
    await sync_to_async(_note)(agent, "MEMORY.md", "- prefs.md: units the person likes", user=owner)
    outcome, _ = await arun(agent, [], user=owner)
    assert "<memory-index>\n- prefs.md: units the person likes\n</memory-index>" in _instructions(outcome)


async def test_an_index_past_6000_characters_is_left_out_not_cut(agent, owner):
    await sync_to_async(_note)(agent, "MEMORY.md", "- line\n" * 1000, user=owner)
    outcome, _ = await arun(agent, [], user=owner)
    text = _instructions(outcome)
    assert "- line" not in text and "too long to show here (7000 characters)" in text


async def test_a_group_chat_uses_the_chats_notes_and_never_the_speakers(agent, owner):
    await sync_to_async(_note)(agent, "MEMORY.md", "- private.md: owner's secret", user=owner)
    await sync_to_async(_note)(agent, "private.md", "owner's secret", user=owner)
    await sync_to_async(_note)(agent, "MEMORY.md", "- team.md: team facts", chat_key="slack:C-team")
    outcome, _ = await arun(agent, [("read_memory", {"name": "private.md"}), ("read_memory", {"name": "MEMORY.md"})],
                            user=owner, **GROUP)
    private, index = outcome.returns
    assert private.startswith("There is no note") and index == "- team.md: team facts"
    # (not the bare word "secret": the catalog's guardrails line speaks of secrets)
    assert "team facts" not in _instructions(outcome) and "owner's secret" not in _instructions(outcome)
    assert "group chat" in _instructions(outcome)


@pytest.mark.parametrize(("surface", "options", "reason"), [
    ("embed", {}, "public widget, an embed or an API-key run"),
    ("api", {}, "public widget, an embed or an API-key run"),
    ("schedule", {"trigger_kind": "schedule"}, "schedule or an event trigger"),
])
async def test_widgets_api_keys_and_schedules_have_no_store_and_say_so(agent, owner, surface, options, reason):
    outcome, _ = await arun(agent, [("write_memory", {"name": "x.md", "content": "y"}), ("list_memory", {})],
                            user=owner, surface=surface, options=options)
    assert all(r.startswith("Refused") and reason in r for r in outcome.returns)
    assert not await sync_to_async(MemoryNote.objects.exists)()


async def test_a_schedule_running_as_its_creator_reads_and_writes_the_creators_store(agent, owner):
    await sync_to_async(_note)(agent, "todo.md", "water plants", user=owner)
    options = {"trigger_kind": "schedule", "run_as_creator": True}
    outcome, _ = await arun(agent, [("read_memory", {"name": "todo.md"}),
                                    ("write_memory", {"name": "log.md", "content": "ran"})],
                            user=owner, surface="schedule", options=options)
    assert outcome.returns[0] == "water plants" and outcome.returns[1].startswith("Saved new note")
    assert await sync_to_async(MemoryNote.objects.filter(owner_user=owner, name="log.md").exists)()


async def test_an_event_trigger_running_as_its_creator_only_reads(agent, owner):
    await sync_to_async(_note)(agent, "todo.md", "water plants", user=owner)
    options = {"trigger_kind": "event", "run_as_creator": True}
    outcome, _ = await arun(agent, [("read_memory", {"name": "todo.md"}),
                                    ("write_memory", {"name": "log.md", "content": "ran"})],
                            user=owner, surface="schedule", options=options)
    assert outcome.returns[0] == "water plants" and outcome.returns[1].startswith("Refused")


async def test_turning_personal_memory_off_removes_the_person_store_but_not_group_notes(org, owner):
    agent = await sync_to_async(factories.published_agent)(
        org, owner, capabilities=[{"id": "memory_files", "config": {"allow_personal_memory": False}}])
    personal, _ = await arun(agent, [("list_memory", {})], user=owner)
    assert personal.returns[0].startswith("Refused") and "turned off" in personal.returns[0]
    group, _ = await arun(agent, [("write_memory", {"name": "team.md", "content": "x"})], user=owner, **GROUP)
    assert group.returns[0].startswith("Saved new note")


async def test_each_person_and_each_agent_has_its_own_store(org, agent, owner, member):
    await sync_to_async(_note)(agent, "prefs.md", "owner likes tea", user=owner)
    other_agent = await sync_to_async(factories.published_agent)(org, owner, name="Other",
                                                                capabilities=[{"id": "memory_files"}])
    as_member, _ = await arun(agent, [("read_memory", {"name": "prefs.md"})], user=member)
    as_other_agent, _ = await arun(other_agent, [("read_memory", {"name": "prefs.md"})], user=owner)
    assert as_member.returns[0].startswith("There is no note")
    assert as_other_agent.returns[0].startswith("There is no note")


async def test_a_suspended_note_is_invisible_to_tools_and_writing_it_again_revives_the_row(agent, owner):
    note = await sync_to_async(_note)(agent, "prefs.md", "old", user=owner)
    note.status = "suspended"
    await sync_to_async(note.save)()
    outcome, _ = await arun(agent, [("read_memory", {"name": "prefs.md"}), ("list_memory", {}),
                                    ("write_memory", {"name": "prefs.md", "content": "new"})], user=owner)
    assert outcome.returns[0].startswith("There is no note") and outcome.returns[1] == "No notes saved yet."
    assert outcome.returns[2].startswith("Replaced note")
    await sync_to_async(note.refresh_from_db)()
    assert (note.pk, note.status, note.content) == (note.pk, "active", "new")
