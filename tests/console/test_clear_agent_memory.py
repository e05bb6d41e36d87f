"""The Toolbox's "clear this agent's memory": notes of every person and group chat and mem0 memories of
every owner, for editors of the agent, after a confirmation, audited; a partial mem0 list is an error."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from agenticos.models import AuditEvent
from knowledge import mem0 as mem0_client
from knowledge.models import MemoryNote
from tests import factories
from tests.fakes.mem0_server import FakeMem0Server, _Handler

pytestmark = pytest.mark.django_db


class _ListingHandler(_Handler):
    """The fake mem0 plus `GET /v1/entities/` (its users), whole or — `fake.partial` — one page of several."""

    def do_GET(self) -> None:  # noqa: N802
        fake = self.server.fake
        path = urlsplit(self.path).path
        fake.requests.append({"method": "GET", "path": path, "query": {}, "headers": {}, "json": None})
        if self.headers.get("Authorization") != f"Token {fake.api_key}":
            self._reply(401, {"detail": "Invalid API key"})
        elif path == "/v1/entities/":
            rows = [{"id": str(i), "name": name, "type": "user", "total_memories": 1}
                    for i, name in enumerate(sorted({m["user_id"] for m in fake.memories}))]
            if getattr(fake, "partial", False):
                self._reply(200, {"count": len(rows), "next": "https://mem0.example/v1/entities/?page=2",
                                  "results": rows[:1]})
            else:
                self._reply(200, rows)
        else:
            self._reply(404, {"detail": "Not found"})


@pytest.fixture
def mem0(settings):
    server = FakeMem0Server()
    server._httpd.RequestHandlerClass = _ListingHandler  # type: ignore[attr-defined]
    with server:
        settings.MEM0_CA_BUNDLE = server.ca_file
        settings.MEM0_ALLOWED_HOSTS = ["localhost"]
        yield server


@pytest.fixture
def world(org, owner, member, outsider_org, outsider, mem0):
    key = factories.secret(org, "mem0 key", value=mem0.api_key)
    bound = [{"id": "memory_files"},
             {"id": "memory_mem0", "config": {"base_url": mem0.base_url}, "secret_id": str(key.pk)}]
    agent = factories.published_agent(org, owner, name="Rememberer", capabilities=bound)
    other = factories.published_agent(org, owner, name="Other")
    theirs = factories.published_agent(outsider_org, outsider, name="Theirs")

    def note(a, name, **owner_of):
        return MemoryNote.objects.create(organization_id=a.organization_id, agent=a, name=name, content="x",
                                         **owner_of)

    note(agent, "MEMORY.md", owner_user=owner)
    note(agent, "prefs.md", owner_user=member)
    note(agent, "room.md", chat_key="slack:C1")
    kept = [note(other, "prefs.md", owner_user=member), note(theirs, "prefs.md", owner_user=outsider)]
    scope = mem0_client.owner_scope
    for user_id in (scope(str(org.pk), str(agent.pk), str(owner.pk)), scope(str(org.pk), str(agent.pk), "slack:C1"),
                    scope(str(org.pk), str(other.pk), str(owner.pk)),
                    scope(str(outsider_org.pk), str(theirs.pk), str(outsider.pk))):
        mem0.memories.append({"id": user_id, "memory": "likes tea", "user_id": user_id})
    return {"agent": agent, "kept": kept, "other": other, "theirs": theirs}


def _clear(client, agent, **data):
    return client.post(f"/agents/{agent.pk}/memory/clear", {"confirm": "yes", **data})


def _deletes(mem0) -> list[str]:
    return [r["query"]["user_id"][0] for r in mem0.requests if r["method"] == "DELETE"]


def test_an_editor_clears_every_owners_notes_and_mem0_memories_of_this_agent_only(client_as, org, owner, world, mem0):
    agent = world["agent"]
    response = _clear(client_as(owner, org), agent)
    assert response.status_code == 302 and response["Location"].endswith("#memory")
    assert not MemoryNote.objects.filter(agent=agent).exists()
    assert set(MemoryNote.objects.all()) == set(world["kept"])
    prefix = f"{org.pk}:{agent.pk}:"
    assert sorted(_deletes(mem0)) == sorted([f"{prefix}{owner.pk}", f"{prefix}slack:C1"])
    assert {m["user_id"] for m in mem0.memories} == {
        mem0_client.owner_scope(str(org.pk), str(world["other"].pk), str(owner.pk)),
        mem0_client.owner_scope(str(world["theirs"].organization_id), str(world["theirs"].pk),
                                str(world["theirs"].owner_id)),
    }
    event = AuditEvent.objects.get(action="memory.clear_agent")
    assert event.details == {"notes_deleted": 3, "mem0_spaces_cleared": 2} and event.target_id == str(agent.pk)
    assert "likes tea" not in str(event.details) and mem0.api_key not in str(event.details)


def test_without_the_confirmation_nothing_is_cleared(client_as, org, owner, world, mem0):
    response = client_as(owner, org).post(f"/agents/{world['agent'].pk}/memory/clear", {})
    assert response.status_code == 302
    assert MemoryNote.objects.filter(agent=world["agent"]).count() == 3
    assert _deletes(mem0) == [] and not AuditEvent.objects.filter(action="memory.clear_agent").exists()


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_someone_who_cannot_edit_the_agent_is_refused_and_nothing_is_cleared(client_as, org, world, mem0, role):
    person = factories.member(org, role)
    response = _clear(client_as(person, org), world["agent"])
    assert response.status_code == 403
    assert MemoryNote.objects.filter(agent=world["agent"]).count() == 3
    assert mem0.requests == [] and not AuditEvent.objects.filter(action="memory.clear_agent").exists()


def test_an_outsider_gets_404_and_nothing_is_cleared(client_as, outsider_org, outsider, world, mem0):
    response = _clear(client_as(outsider, outsider_org), world["agent"])
    assert response.status_code == 404
    assert MemoryNote.objects.filter(agent=world["agent"]).count() == 3 and mem0.requests == []


def test_a_partial_mem0_user_list_is_an_error_and_the_notes_stay(client_as, org, owner, world, mem0):
    mem0.partial = True
    client = client_as(owner, org)
    response = _clear(client, world["agent"])
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "listed only part of its users" in page and mem0.api_key not in page
    assert MemoryNote.objects.filter(agent=world["agent"]).count() == 3
    assert _deletes(mem0) == [] and not AuditEvent.objects.filter(action="memory.clear_agent").exists()


def test_the_toolbox_offers_it_to_editors_only(client_as, org, owner, member, world):
    url = f"/agents/{world['agent'].pk}/"
    page = client_as(owner, org).get(url).content.decode()
    assert "data-memory-clear" in page and "3 notes" in page and 'name="confirm"' in page
    assert "data-memory-clear" not in client_as(member, org).get(url).content.decode()
