"""Settings → Memory: every person sees what agents wrote about them, suspends/restores/deletes; admins with
members:manage clear another member; only deployment administrators read another person's notes (audited,
without content)."""

from __future__ import annotations

import pytest

from agenticos.models import AuditEvent
from knowledge.models import MemoryNote
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(org, owner):
    return factories.published_agent(org, owner, capabilities=[{"id": "memory_files"}])


def _note(agent, user, name="prefs.md", content="likes tea", **extra):
    return MemoryNote.objects.create(organization_id=agent.organization_id, agent=agent, owner_user=user,
                                     name=name, content=content, **extra)


def test_a_viewer_sees_every_note_agents_wrote_about_them_by_agent_and_date(api_as, viewer, org, agent, owner):
    _note(agent, viewer)
    _note(agent, owner, content="owner only")
    MemoryNote.objects.create(organization=org, agent=agent, chat_key="slack:C1", name="team.md", content="room")
    body = api_as(viewer, org).get("/api/v1/memory").json()
    assert [(n["agent_name"], n["name"], n["content"]) for n in body["results"]] == [("Helper", "prefs.md", "likes tea")]
    assert body["not_listed_mem0_agents"] == []


def test_suspending_hides_the_note_and_removes_index_lines_naming_it_restoring_does_not_put_them_back(
        api_as, member, org, agent):
    note = _note(agent, member)
    index = _note(agent, member, name="MEMORY.md", content="- prefs.md: tea\n- work.md: projects")
    client = api_as(member, org)
    assert client.post(f"/api/v1/memory/notes/{note.pk}/suspend").json()["status"] == "suspended"
    index.refresh_from_db()
    assert index.content == "- work.md: projects"
    assert client.post(f"/api/v1/memory/notes/{note.pk}/restore").json()["status"] == "active"
    index.refresh_from_db()
    assert index.content == "- work.md: projects"
    assert AuditEvent.objects.filter(action__in=["memory.suspend", "memory.restore"]).count() == 2


def test_deleting_a_note_removes_it_and_its_index_lines(api_as, member, org, agent):
    note = _note(agent, member)
    index = _note(agent, member, name="MEMORY.md", content="- prefs.md: tea")
    assert api_as(member, org).delete(f"/api/v1/memory/notes/{note.pk}").status_code == 204
    index.refresh_from_db()
    assert not MemoryNote.objects.filter(pk=note.pk).exists() and index.content == ""


@pytest.mark.parametrize("call", ["suspend", "restore", "delete"])
def test_nobody_acts_on_another_persons_note_not_even_an_owner(api_as, owner, member, org, agent, call):
    note = _note(agent, member)
    client = api_as(owner, org)
    response = (client.delete(f"/api/v1/memory/notes/{note.pk}") if call == "delete"
                else client.post(f"/api/v1/memory/notes/{note.pk}/{call}"))
    assert response.status_code == 404
    note.refresh_from_db()
    assert note.status == "active"


def test_an_outsider_gets_404_on_memory_endpoints(api_as, outsider, outsider_org, org, agent, member):
    note = _note(agent, member)
    client = api_as(outsider, org)  # naming an organization they are not in
    assert client.get("/api/v1/memory").status_code == 404
    assert client.post(f"/api/v1/memory/notes/{note.pk}/suspend").status_code == 404
    assert client.post("/api/v1/memory/clear", {"user_id": member.pk}, format="json").status_code == 404
    own_org = api_as(outsider, outsider_org)
    assert own_org.delete(f"/api/v1/memory/notes/{note.pk}").status_code == 404
    assert own_org.post("/api/v1/memory/clear", {"user_id": member.pk}, format="json").status_code == 404


def test_a_person_clears_their_own_memory_without_any_permission(api_as, viewer, org, agent):
    _note(agent, viewer)
    _note(agent, viewer, name="other.md")
    response = api_as(viewer, org).post("/api/v1/memory/clear", {}, format="json")
    assert response.status_code == 200 and response.json()["notes_deleted"] == 2
    assert not MemoryNote.objects.filter(owner_user=viewer).exists()


def test_clearing_another_member_needs_members_manage(api_as, admin_user, member, builder, org, agent):
    _note(agent, member)
    assert api_as(builder, org).post("/api/v1/memory/clear", {"user_id": member.pk},
                                     format="json").status_code == 403
    assert MemoryNote.objects.filter(owner_user=member).exists()
    assert api_as(admin_user, org).post("/api/v1/memory/clear", {"user_id": member.pk},
                                        format="json").status_code == 200
    assert not MemoryNote.objects.filter(owner_user=member).exists()
    event = AuditEvent.objects.get(action="memory.clear_person")
    assert event.target_id == str(member.pk) and event.actor == admin_user


def test_only_a_deployment_admin_reads_another_persons_notes_with_a_reason_and_it_is_audited_without_content(
        api_as, owner, member, org, agent):
    _note(agent, member, content="very private words")
    url = f"/api/v1/memory/person/{member.pk}?organization_id={org.pk}&reason=DSAR%20ticket%2042"
    assert api_as(owner, org).get(url).status_code == 403
    staff = factories.user(is_staff=True, is_superuser=True)
    client = api_as(staff)
    assert client.get(f"/api/v1/memory/person/{member.pk}?organization_id={org.pk}").status_code == 422
    response = client.get(url)
    assert response.status_code == 200 and response.json()["results"][0]["content"] == "very private words"
    event = AuditEvent.objects.get(action="memory.admin_read")
    assert event.organization == org and event.target_id == str(member.pk)
    assert event.details == {"reason": "DSAR ticket 42"} and "private" not in str(event.details)


def test_the_admin_read_404s_for_a_person_outside_the_named_tenant(api_as, member, org, outsider_org):
    staff = factories.user(is_staff=True, is_superuser=True)
    url = f"/api/v1/memory/person/{member.pk}?organization_id={outsider_org.pk}&reason=x"
    assert api_as(staff).get(url).status_code == 404


@pytest.mark.parametrize("action", ["suspend", "restore", "anything"])
def test_delete_on_a_note_action_is_a_405_envelope_and_leaves_the_note(api_as, member, org, agent, action):
    note = _note(agent, member)
    response = api_as(member, org).delete(f"/api/v1/memory/notes/{note.pk}/{action}")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    note.refresh_from_db()
    assert note.status == "active"
